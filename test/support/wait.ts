// Polling for a condition in tests, with a deadline that names what was awaited. The default bound
// is generous on purpose: CI is a loaded 2-core machine, and a bound only costs time when it fails.
// Every bound is stretched on a machine known to be slower (time-scale.ts).
import { scaled } from './time-scale.ts';

/** Calls `fn` every 50 ms until it returns something truthy, which it returns; fails after `timeoutMs`. */
export async function until<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, bound = 30_000): Promise<T> {
  const timeoutMs = scaled(bound);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
