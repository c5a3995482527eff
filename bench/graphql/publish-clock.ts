// When the chat schema published each burst event, read on the machine's monotonic clock
// (CLOCK_MONOTONIC, the same in every process), so the bench can time publish → receipt across
// the server's process and its own.

/** Milliseconds on the monotonic clock shared by every process on this machine. */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** `performance.now()` plus this offset is `monotonicMs()`: a clock read without a BigInt. */
export const performanceToMonotonic = clockOffset();

function clockOffset(): number {
  // The first reads of either clock load code (a millisecond or more): read both before measuring,
  // then keep the reading that the two monotonic reads around it bracket most tightly.
  monotonicMs();
  performance.now();
  let best = Number.POSITIVE_INFINITY;
  let offset = 0;
  for (let i = 0; i < 20; i++) {
    const before = monotonicMs();
    const now = performance.now();
    const after = monotonicMs();
    if (after - before < best) {
      best = after - before;
      offset = (before + after) / 2 - now;
    }
  }
  return offset;
}

/** The sequence number in a burst event's text (`b <seq>`), or -1 for any other message. */
export function burstSeqOfText(text: string): number {
  const match = /^b (\d+)$/.exec(text);
  return match ? Number(match[1]) : -1;
}

/** Publish times of this process's burst events: [seq, monotonic ms] pairs. */
const published: Array<[number, number]> = [];

export function recordPublish(text: string): void {
  const seq = burstSeqOfText(text);
  if (seq >= 0) published.push([seq, monotonicMs()]);
}

/** Every publish time recorded so far; the bench asks for them over IPC after a run. */
export function takePublishTimes(): Array<[number, number]> {
  return published.splice(0);
}
