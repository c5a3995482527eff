// A PubSub spanning processes or isolates: events go through a broker (Redis, a BroadcastChannel…)
// and are fanned out locally. A broker adapter only moves strings; this file owns JSON encoding,
// per-topic reference counting and the sender's own copy. A broker that hands the sender its own
// messages back in its one global order (Redis) delivers to local subscribers too, so every instance
// sees the same order: an event published after another one's publish resolved, on any instance,
// arrives after it everywhere. A broker without such an echo (BroadcastChannel) gets local delivery
// at once, and we drop any echo it does send.
import { LocalTopics, type InProcessPubSubOptions, type PubSub, type TopicMap } from './pubsub.ts';

/** What a broker must do for createSharedPubSub. Implement this to plug in a new engine. */
export interface PubSubEngine {
  /** Called once, before anything else, with the function to hand every incoming message to. */
  start(receive: (topic: string, message: string) => void): void;
  /** Sends `message` to every instance listening to `topic` (this one included or not). */
  publish(topic: string, message: string): Promise<void>;
  /** Starts receiving `topic`; called when its first local subscriber arrives. */
  listen(topic: string): Promise<void>;
  /** Stops receiving `topic`; called when its last local subscriber leaves. */
  unlisten(topic: string): Promise<void>;
  /** Releases connections/channels. */
  close(): Promise<void>;
  /**
   * True when the broker delivers our own messages back to us, in the order it delivers everything to
   * everyone (Redis pub/sub). Local subscribers then receive through the broker as well.
   */
  readonly ordersEcho?: boolean;
}

export interface SharedPubSubOptions extends InProcessPubSubOptions {
  /** Receives broker failures (a failed listen/unlisten, an undecodable message). Default: console.error. */
  onError?: (error: unknown) => void;
}

/** Wire format: who sent it, so we can drop our own echo, and the payload. */
interface Envelope {
  o: string;
  p: unknown;
}

export function createSharedPubSub<Topics extends TopicMap = TopicMap>(
  engine: PubSubEngine,
  options: SharedPubSubOptions = {},
): PubSub<Topics> & { readonly ready: (topic: string) => Promise<void> } {
  const origin = crypto.randomUUID();
  const onError = options.onError ?? ((error: unknown) => console.error('pubsub engine:', error));
  // The latest listen/unlisten per topic, chained so they reach the broker in order.
  const pending = new Map<string, Promise<void>>();
  const chain = (topic: string, step: () => Promise<void>): void => {
    const next = (pending.get(topic) ?? Promise.resolve()).then(step).catch(onError);
    pending.set(topic, next);
    void next.then(() => {
      if (pending.get(topic) === next) pending.delete(topic);
    });
  };
  const topics = new LocalTopics(options, {
    onFirstSubscriber: (topic) => chain(topic, () => engine.listen(topic)),
    onLastSubscriber: (topic) => chain(topic, () => engine.unlisten(topic)),
  });
  engine.start((topic, message) => {
    let envelope: Envelope;
    try {
      envelope = JSON.parse(message) as Envelope;
    } catch (error) {
      onError(new Error(`pubsub: dropped an undecodable message on topic "${topic}": ${String(error)}`));
      return;
    }
    if (envelope === null || typeof envelope !== 'object' || typeof envelope.o !== 'string') {
      onError(new Error(`pubsub: dropped a message without an origin on topic "${topic}"`));
      return;
    }
    if (envelope.o === origin && !engine.ordersEcho) return;
    topics.deliver(topic, envelope.p);
  });
  let closed = false;
  return {
    async publish(topic, payload) {
      if (closed) throw new Error('pubsub: publish after close()');
      const message = JSON.stringify({ o: origin, p: payload } satisfies Envelope);
      if (engine.ordersEcho) {
        // A local subscriber that arrived before this publish must hear it: wait until the broker
        // confirmed listening. Publishes waiting here resume in call order, so none overtakes another.
        const listening = pending.get(topic);
        if (listening) await listening;
      } else {
        topics.deliver(topic, JSON.parse(message).p);
      }
      await engine.publish(topic, message);
    },
    subscribe(topic, subscribeOptions) {
      return topics.subscribe(topic, subscribeOptions) as AsyncIterableIterator<Topics[typeof topic]>;
    },
    /** Resolves once the broker confirmed listening to `topic` (for tests and health checks). */
    async ready(topic) {
      await pending.get(topic);
    },
    async close() {
      if (closed) return;
      closed = true;
      topics.closeAll();
      await Promise.allSettled([...pending.values()]);
      await engine.close();
    },
  };
}
