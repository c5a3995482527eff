// Runs async sections one at a time (record updates and garbage collection must not interleave).
export class Serial {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(section: () => Promise<T>): Promise<T> {
    const next = this.tail.then(section, section);
    this.tail = next.catch(() => {});
    return next;
  }
}

/**
 * Runs `fn` over `items` with at most `limit` in flight. After a failure nothing new starts, the
 * running ones finish (so nothing is left writing in the background), then the first error is thrown.
 */
export async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  let failed = false;
  let firstError: unknown;
  const worker = async () => {
    while (!failed && next < items.length) {
      const i = next++;
      try {
        out[i] = await fn(items[i], i);
      } catch (err) {
        if (!failed) firstError = err;
        failed = true;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failed) throw firstError;
  return out;
}
