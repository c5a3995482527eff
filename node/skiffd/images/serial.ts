// Runs async sections one at a time (record updates and garbage collection must not interleave).
export class Serial {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(section: () => Promise<T>): Promise<T> {
    const next = this.tail.then(section, section);
    this.tail = next.catch(() => {});
    return next;
  }
}

/** Runs `fn` over `items` with at most `limit` in flight; rejects with the first error. */
export async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
