// How much slower than this host the machine under test is known to be. The Debian node runs under an
// emulated CPU, 30-40 times slower than the host, and its speed moves with the machine it lands on; the
// guest suite sets SKIFF_TEST_TIME_SCALE there, and the harness stretches every bound it waits with
// (polls, starts, pod states) by it. A bound costs time only when the wait fails anyway; on a
// healthy run nothing waits longer than what it awaits takes.
export const timeScale = Math.max(1, Number(process.env.SKIFF_TEST_TIME_SCALE) || 1);

/** `ms` stretched for this machine. */
export const scaled = (ms: number): number => Math.round(ms * timeScale);
