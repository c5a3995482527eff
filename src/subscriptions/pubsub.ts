// Publish/subscribe between GraphQL operations: a mutation publishes, subscription resolvers iterate.
// The interface is all a schema depends on, so the in-process default can be swapped for a shared
// engine (see pubsub-shared.ts) without touching resolvers.

/** Topic name → payload type. `Record<string, unknown>` when untyped. */
export type TopicMap = Record<string, unknown>;

export interface SubscribeOptions {
  /** Aborting ends the iterator, like calling `return()`. */
  signal?: AbortSignal;
}

export interface PubSub<Topics extends TopicMap = TopicMap> {
  /** Delivers `payload` to every current subscriber of `topic`. Resolves once handed to the engine. */
  publish<T extends keyof Topics & string>(topic: T, payload: Topics[T]): Promise<void>;
  /**
   * Events published to `topic` from now on. `return()` (what `for await … break` and graphql-js call
   * when a subscription ends) unsubscribes at once and settles any pending `next()` with `done`.
   */
  subscribe<T extends keyof Topics & string>(topic: T, options?: SubscribeOptions): AsyncIterableIterator<Topics[T]>;
  /** Ends every iterator and releases the engine's resources. */
  close(): Promise<void>;
}

export interface InProcessPubSubOptions {
  /**
   * Events queued for one subscriber that is not consuming (a stalled socket). Past it the oldest
   * events are dropped, so one slow client cannot grow memory without bound. Default 1024.
   */
  maxQueuedEvents?: number;
}

/** A pub/sub whose subscribers live in this process (or isolate) only. */
export function createInProcessPubSub<Topics extends TopicMap = TopicMap>(options: InProcessPubSubOptions = {}): PubSub<Topics> {
  const topics = new LocalTopics(options);
  return {
    async publish(topic, payload) {
      topics.deliver(topic, payload);
    },
    subscribe(topic, subscribeOptions) {
      return topics.subscribe(topic, subscribeOptions) as AsyncIterableIterator<Topics[typeof topic]>;
    },
    async close() {
      topics.closeAll();
    },
  };
}

export interface LocalTopicsHooks {
  /** The first subscriber of `topic` arrived (a shared engine starts listening to it). */
  onFirstSubscriber?(topic: string): void;
  /** The last subscriber of `topic` left (a shared engine stops listening to it). */
  onLastSubscriber?(topic: string): void;
}

/**
 * The fan-out every PubSub in this folder shares: a set of queue-backed iterators per topic.
 * Exported for engine adapters; resolvers should only see the `PubSub` interface.
 */
export class LocalTopics {
  readonly #subscribers = new Map<string, Set<Subscription>>();
  readonly #maxQueued: number;
  readonly #hooks: LocalTopicsHooks;

  constructor(options: InProcessPubSubOptions = {}, hooks: LocalTopicsHooks = {}) {
    const max = options.maxQueuedEvents ?? 1024;
    if (!Number.isInteger(max) || max < 1) {
      throw new RangeError(`maxQueuedEvents must be a positive integer, got ${String(max)}`);
    }
    this.#maxQueued = max;
    this.#hooks = hooks;
  }

  /** Number of live iterators on `topic` (or on all topics). */
  subscriberCount(topic?: string): number {
    if (topic !== undefined) return this.#subscribers.get(topic)?.size ?? 0;
    let n = 0;
    for (const set of this.#subscribers.values()) n += set.size;
    return n;
  }

  deliver(topic: string, payload: unknown): void {
    const set = this.#subscribers.get(topic);
    if (!set) return;
    for (const sub of set) sub.push(payload);
  }

  subscribe(topic: string, options: SubscribeOptions = {}): AsyncIterableIterator<unknown> {
    if (typeof topic !== 'string' || topic === '') throw new TypeError('subscribe: topic must be a non-empty string');
    const sub = new Subscription(this.#maxQueued, () => this.#remove(topic, sub));
    if (options.signal?.aborted) {
      sub.end();
      return sub;
    }
    let set = this.#subscribers.get(topic);
    if (!set) {
      set = new Set();
      this.#subscribers.set(topic, set);
      set.add(sub);
      this.#hooks.onFirstSubscriber?.(topic);
    } else {
      set.add(sub);
    }
    options.signal?.addEventListener('abort', () => sub.end(), { once: true });
    return sub;
  }

  closeAll(): void {
    for (const set of [...this.#subscribers.values()]) for (const sub of [...set]) sub.end();
  }

  #remove(topic: string, sub: Subscription): void {
    const set = this.#subscribers.get(topic);
    if (!set?.delete(sub)) return;
    if (set.size === 0) {
      this.#subscribers.delete(topic);
      this.#hooks.onLastSubscriber?.(topic);
    }
  }
}

/** One subscriber: a bounded queue of events, or the `next()` calls waiting for one. */
class Subscription implements AsyncIterableIterator<unknown> {
  readonly #queue: unknown[] = [];
  readonly #waiting: ((result: IteratorResult<unknown>) => void)[] = [];
  #done = false;
  readonly #max: number;
  readonly #onEnd: () => void;

  constructor(max: number, onEnd: () => void) {
    this.#max = max;
    this.#onEnd = onEnd;
  }

  push(value: unknown): void {
    if (this.#done) return;
    const resolve = this.#waiting.shift();
    if (resolve) {
      resolve({ value, done: false });
      return;
    }
    if (this.#queue.length >= this.#max) this.#queue.shift();
    this.#queue.push(value);
  }

  end(): void {
    if (this.#done) return;
    this.#done = true;
    this.#queue.length = 0;
    this.#onEnd();
    for (const resolve of this.#waiting.splice(0)) resolve({ value: undefined, done: true });
  }

  next(): Promise<IteratorResult<unknown>> {
    if (this.#queue.length > 0) return Promise.resolve({ value: this.#queue.shift(), done: false });
    if (this.#done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  return(): Promise<IteratorResult<unknown>> {
    this.end();
    return Promise.resolve({ value: undefined, done: true });
  }

  throw(error?: unknown): Promise<IteratorResult<unknown>> {
    this.end();
    return Promise.reject(error);
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<unknown> {
    return this;
  }
}
