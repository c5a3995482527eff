// What one plugin asks on its own (UpdateContainers: resource updates, evictions) is carried out a
// few requests at a time, with a bounded number waiting; beyond that the plugin is told to wait for
// its answers, so that no plugin can start any number of runtime updates at once.

/** Requests of one plugin carried out at once. */
export const UNSOLICITED_CONCURRENCY = 2;
/** Requests of one plugin waiting for their turn; one more is refused. */
export const UNSOLICITED_QUEUE = 16;

export class RequestLimitExceeded extends Error {
  override name = 'RequestLimitExceeded';
}

export class RequestLimit {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly concurrency = UNSOLICITED_CONCURRENCY,
    private readonly queue = UNSOLICITED_QUEUE,
  ) {}

  /** Runs fn when a slot is free; rejects at once (RequestLimitExceeded) if too many already wait. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.running >= this.concurrency) {
      if (this.waiting.length >= this.queue) {
        throw new RequestLimitExceeded(`${this.running} requests in progress and ${this.waiting.length} waiting; wait for their answers before asking again`);
      }
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else this.running++;
    try {
      return await fn();
    } finally {
      // The slot passes straight to the next waiting request, if any.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
