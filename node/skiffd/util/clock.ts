// Timestamps the CRI reports (created, started, finished): nanoseconds since the epoch. Anchored to
// the wall clock once and advanced by the monotonic clock, so two readings never go backwards.
const EPOCH_BASE = BigInt(Date.now()) * 1_000_000n - process.hrtime.bigint();

export const nowNs = (): bigint => EPOCH_BASE + process.hrtime.bigint();
