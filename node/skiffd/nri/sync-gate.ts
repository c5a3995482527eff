// A plugin's synchronization must not fall in the middle of a CRI call that tells plugins of a pod or
// container being made (RunPodSandbox, CreateContainer): its snapshot would lack what is being made,
// and the events that follow would name something it never heard of. Such calls hold a block for
// their whole length; a synchronization waits (bounded) until none is held, and while one waits or
// runs, new blocks wait for it, so that a steady stream of calls cannot hold it off for ever.

/** How long a synchronization waits for CRI calls in flight before the plugin is turned away. */
export const SYNC_WAIT_MS = 60_000;

export class SyncBusyError extends Error {
  override name = 'SyncBusyError';
}

export class SyncGate {
  private held = 0;
  private readonly idle: (() => void)[] = [];
  /** Settles once the synchronization waiting or running now is over. */
  private syncing: Promise<void> | undefined;

  constructor(private readonly waitMs = SYNC_WAIT_MS) {}

  /** CRI calls in flight that hold synchronizations off. */
  get blocks(): number {
    return this.held;
  }

  /**
   * Holds synchronizations off until the returned release is called (once is enough; more is
   * harmless). Waits first for synchronizations already waiting or running: each is bounded, and so
   * is the whole wait (plugins connecting over and over must not stall every creation), after which
   * the block is taken anyway and the synchronizations wait for it.
   */
  async block(): Promise<() => void> {
    const deadline = Date.now() + this.waitMs;
    while (this.syncing && Date.now() < deadline) await within(this.syncing, deadline - Date.now());
    this.held++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held--;
      if (this.held === 0) for (const wake of this.idle.splice(0)) wake();
    };
  }

  /**
   * Runs `fn` once no block is held, new blocks waiting until it is done; one at a time. `signal`
   * (the plugin went away) ends the wait at once.
   */
  async synchronize<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    while (this.syncing) await this.syncing;
    let done!: () => void;
    this.syncing = new Promise<void>((resolve) => (done = resolve));
    try {
      await this.drained(signal);
      return await fn();
    } finally {
      this.syncing = undefined;
      done();
    }
  }

  private drained(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(new Error('the plugin went away'));
    if (this.held === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const settle = (err?: Error) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', gone);
        const i = this.idle.indexOf(wake);
        if (i >= 0) this.idle.splice(i, 1);
        if (err) reject(err);
        else resolve();
      };
      const wake = () => settle();
      const gone = () => settle(new Error('the plugin went away'));
      const timer = setTimeout(
        () => settle(new SyncBusyError(`${this.held} pod or container creation(s) still in flight after ${this.waitMs} ms`)),
        this.waitMs,
      );
      signal?.addEventListener('abort', gone, { once: true });
      this.idle.push(wake);
    });
  }
}

/** Settles when `promise` does or `ms` have passed, whichever is first. */
function within(promise: Promise<void>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]).finally(() => clearTimeout(timer));
}
