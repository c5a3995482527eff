// Percentiles over latency samples. Nearest-rank on the sorted samples, so p50/p90 are always a value
// that was actually measured (no interpolation between two runs).

export interface Summary {
  n: number;
  p50: number;
  p90: number;
  min: number;
  max: number;
  mean: number;
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

export function summarize(samples: number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.reduce((s, v) => s + v, 0) / (sorted.length || 1);
  return {
    n: sorted.length,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    min: sorted[0] ?? Number.NaN,
    max: sorted[sorted.length - 1] ?? Number.NaN,
    mean,
  };
}

/** Milliseconds with enough digits for sub-millisecond ops and none wasted on slow ones. */
export function ms(v: number): string {
  if (!Number.isFinite(v)) return '-';
  // By magnitude, so a negative difference is written as its positive counterpart would be.
  if (Math.abs(v) < 1) return v.toFixed(2);
  if (Math.abs(v) < 10) return v.toFixed(1);
  return v.toFixed(0);
}

export function ratio(a: number, b: number): string {
  if (!Number.isFinite(a) || !Number.isFinite(b) || b === 0) return '-';
  return `${(a / b).toFixed(2)}x`;
}

/** Left-aligned first column, right-aligned others. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}
