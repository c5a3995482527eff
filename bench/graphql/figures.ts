// Figures derived from measurements: a quotient exists only when both sides were measured. A CPU time
// or a count of zero means the measurement did not see the work, not that the work was free, so it
// yields no figure rather than Infinity or NaN, and the report says so.

/** `a / b` when both are finite and positive; undefined otherwise. Also for a total over a count. */
export function ratio(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined || b === undefined) return undefined;
  if (!Number.isFinite(a) || !Number.isFinite(b) || a <= 0 || b <= 0) return undefined;
  return a / b;
}

/** `1.23×`, or what the reader needs to know when the figure could not be measured. */
export function times(value: number | undefined, digits = 2): string {
  return value === undefined ? 'not measured' : `${value.toFixed(digits)}×`;
}

/** A figure with its unit, or "not measured". */
export function fixed(value: number | undefined, digits: number, unit = ''): string {
  return value === undefined || !Number.isFinite(value) ? 'not measured' : `${value.toFixed(digits)}${unit}`;
}
