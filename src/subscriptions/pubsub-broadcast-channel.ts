// A PubSubEngine over the web-standard BroadcastChannel. Where a runtime connects channels of the same
// name across instances, this is a shared engine with nothing to run: Deno Deploy delivers across
// isolates and regions, Node across worker_threads of one process, browsers across tabs. workerd has
// no BroadcastChannel (use a Durable Object there), and separate Node processes need Redis.
import { createSharedPubSub, type PubSubEngine, type SharedPubSubOptions } from './pubsub-shared.ts';
import type { PubSub, TopicMap } from './pubsub.ts';

export interface BroadcastChannelEngineOptions {
  /** Prefix of channel names, so unrelated apps on the same runtime do not hear each other. */
  prefix?: string;
}

export function broadcastChannelEngine(options: BroadcastChannelEngineOptions = {}): PubSubEngine {
  if (typeof BroadcastChannel !== 'function') {
    throw new Error('broadcastChannelEngine: this runtime has no BroadcastChannel (on workerd use a Durable Object)');
  }
  const prefix = options.prefix ?? 'skiff:';
  const listening = new Map<string, BroadcastChannel>();
  let receive: (topic: string, message: string) => void = () => {};
  return {
    start(onMessage) {
      receive = onMessage;
    },
    async publish(topic, message) {
      // A channel that is listening already can send; otherwise open one just for this message.
      const open = listening.get(topic);
      if (open) {
        open.postMessage(message);
        return;
      }
      const channel = new BroadcastChannel(prefix + topic);
      channel.postMessage(message);
      channel.close();
    },
    async listen(topic) {
      if (listening.has(topic)) return;
      const channel = new BroadcastChannel(prefix + topic);
      channel.onmessage = (event: MessageEvent) => {
        if (typeof event.data === 'string') receive(topic, event.data);
      };
      // Node keeps the process alive while a channel is open; subscribers should not.
      (channel as { unref?: () => void }).unref?.();
      listening.set(topic, channel);
    },
    async unlisten(topic) {
      listening.get(topic)?.close();
      listening.delete(topic);
    },
    async close() {
      for (const channel of listening.values()) channel.close();
      listening.clear();
    },
  };
}

/** A PubSub shared by every instance whose BroadcastChannels are connected. */
export function createBroadcastChannelPubSub<Topics extends TopicMap = TopicMap>(
  options: BroadcastChannelEngineOptions & SharedPubSubOptions = {},
): PubSub<Topics> & { readonly ready: (topic: string) => Promise<void> } {
  return createSharedPubSub<Topics>(broadcastChannelEngine(options), options);
}
