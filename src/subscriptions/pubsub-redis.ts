// A PubSubEngine over Redis PUBLISH/SUBSCRIBE, for several Node processes or hosts behind one load
// balancer. Typed structurally against ioredis so src/ stays free of Node imports: pass two ioredis
// clients, one to publish and one that this engine puts in subscriber mode (Redis forbids other
// commands on a subscribed connection).
import { createSharedPubSub, type PubSubEngine, type SharedPubSubOptions } from './pubsub-shared.ts';
import type { PubSub, TopicMap } from './pubsub.ts';

/** The part of an ioredis client the publisher side uses. */
export interface RedisPublisher {
  publish(channel: string, message: string): Promise<unknown>;
  quit(): Promise<unknown>;
}

/** The part of an ioredis client the subscriber side uses. */
export interface RedisSubscriber {
  subscribe(channel: string): Promise<unknown>;
  unsubscribe(channel: string): Promise<unknown>;
  on(event: 'message', listener: (channel: string, message: string) => void): unknown;
  quit(): Promise<unknown>;
}

export interface RedisEngineOptions {
  publisher: RedisPublisher;
  subscriber: RedisSubscriber;
  /** Prefix of channel names, so several apps can share one Redis. Default "skiff:". */
  prefix?: string;
  /** Whether close() quits the two clients (default true); false when the app owns them. */
  quitOnClose?: boolean;
}

export function redisEngine(options: RedisEngineOptions): PubSubEngine {
  const { publisher, subscriber } = options;
  const prefix = options.prefix ?? 'skiff:';
  return {
    // Redis sends a PUBLISH to every subscribed connection, ours too, in the order it ran them.
    ordersEcho: true,
    start(receive) {
      subscriber.on('message', (channel, message) => {
        if (channel.startsWith(prefix)) receive(channel.slice(prefix.length), message);
      });
    },
    async publish(topic, message) {
      await publisher.publish(prefix + topic, message);
    },
    async listen(topic) {
      await subscriber.subscribe(prefix + topic);
    },
    async unlisten(topic) {
      await subscriber.unsubscribe(prefix + topic);
    },
    async close() {
      if (options.quitOnClose === false) return;
      await Promise.allSettled([publisher.quit(), subscriber.quit()]);
    },
  };
}

/** A PubSub shared by every process connected to the same Redis. */
export function createRedisPubSub<Topics extends TopicMap = TopicMap>(
  options: RedisEngineOptions & SharedPubSubOptions,
): PubSub<Topics> & { readonly ready: (topic: string) => Promise<void> } {
  return createSharedPubSub<Topics>(redisEngine(options), options);
}
