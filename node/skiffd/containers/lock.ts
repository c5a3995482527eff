// One async mutex per container id: RPCs on one container run one after another.
export class IdLock {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(id) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => mine);
    this.tails.set(id, tail);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      if (this.tails.get(id) === tail) this.tails.delete(id);
    }
  }
}
