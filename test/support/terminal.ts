// Waiting on interactive sessions in tests: a promise with a deadline, and a terminal's size as the
// shell inside it reports it.
import assert from 'node:assert/strict';
import { until } from './wait.ts';

/** `p`, or a failure naming `what` after `ms`. */
export async function withDeadline<T>(what: string, p: Promise<T>, ms = 15_000): Promise<T> {
  let timer: NodeJS.Timeout;
  const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms)));
  try {
    return await Promise.race([p, deadline]);
  } finally {
    clearTimeout(timer!);
  }
}

/**
 * Asks the shell on a terminal for its size until the answer is `want`, within a bound. A resize and
 * the typed `stty size` travel on independent streams, so one answer may predate the resize: ask
 * again rather than bet on an order. Each ask waits for its answer (or a few seconds) before the next.
 */
export async function untilTerminalSize(
  term: { output: () => string; type: (text: string) => void },
  want: string,
  what: string,
  timeoutMs = 30_000,
): Promise<void> {
  const answers = () => [...term.output().matchAll(/^(\d+ \d+)\r*$/gm)].map((m) => m[1]);
  const deadline = Date.now() + timeoutMs;
  let last = 'none';
  while (Date.now() < deadline) {
    const asked = answers().length;
    term.type('stty size\n');
    // A line typed before the session is wired up gets no answer: after a while, type it again.
    const answer = await until('an answer to stty size', () => answers()[asked], Math.min(5_000, Math.max(0, deadline - Date.now()))).catch(() => undefined);
    if (answer === undefined) continue;
    last = answer;
    if (answer === want) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`${what}: the terminal should say "${want}"; its last answer within ${timeoutMs} ms was "${last}"; output: ${JSON.stringify(term.output())}`);
}
