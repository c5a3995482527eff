// Tables and target checks for the bench results (Markdown, so they paste into the README as is).
import type { ColdStartMeasurement } from './cold-start-bench.ts';
import type { EdgeMeasurement } from './edge-bench.ts';
import type { Measurement } from './http-bench.ts';
import type { InterleavedMeasurement } from './interleaved-bench.ts';
import type { BenchQuery } from './queries.ts';
import { fixed, ratio, times } from './figures.ts';

function ceilingRatio(m: Measurement | undefined, ceiling: Measurement | undefined): number | undefined {
  if (m?.ratio !== undefined) return m.ratio;
  return ratio(m?.requestsPerSecond, ceiling?.requestsPerSecond);
}

export function httpTable(measurements: readonly Measurement[], queries: readonly BenchQuery[], servers: readonly { name: string; label: string }[]): string {
  const find = (server: string, query: string) => measurements.find((m) => m.server === server && m.query === query);
  const header = `| server | ${queries.map((q) => `${q.label}: req/s · p99 · ratio · server CPU/req`).join(' | ')} |`;
  const rule = `|---|${queries.map(() => '---:').join('|')}|`;
  const rows = servers.map(({ name, label }) => {
    const cells = queries.map((q) => {
      const m = find(name, q.id);
      if (!m) return '–';
      const r = ceilingRatio(m, find('ceiling', q.id));
      const flags = `${m.failures ? ` ⚠ ${m.failures} failed` : ''}${m.note ? ' *' : ''}`;
      const cpu = m.cpuMicroseconds === undefined ? '–' : `${Math.round(m.cpuMicroseconds)} µs`;
      return `${Math.round(m.requestsPerSecond)} · ${m.p99Ms} ms · ${r === undefined ? '–' : r.toFixed(2)} · ${cpu}${flags}`;
    });
    return `| ${label} | ${cells.join(' | ')} |`;
  });
  const notes = [...new Set(measurements.filter((m) => m.note).map((m) => `${m.server}: ${m.note}`))].map((n) => `\\* ${n}`);
  return [header, rule, ...rows, ...(notes.length ? ['', ...notes] : [])].join('\n');
}

export function edgeTable(results: readonly EdgeMeasurement[], queries: readonly BenchQuery[]): string {
  const runtimes = [...new Set(results.map((r) => r.runtime))];
  const header = `| runtime | ${queries.map((q) => `${q.label} µs/request: skiff · graphql-http · speed-up`).join(' | ')} |`;
  const rule = `|---|${queries.map(() => '---:').join('|')}|`;
  const rows = runtimes.map((runtime) => {
    const cells = queries.map((q) => {
      const ours = results.find((r) => r.runtime === runtime && r.query === q.id && r.impl === 'skiff');
      const plain = results.find((r) => r.runtime === runtime && r.query === q.id && r.impl === 'graphql-http');
      if (!ours || !plain) return '–';
      return `${fixed(ours.microseconds, 1)} · ${fixed(plain.microseconds, 1)} · ${times(ratio(plain.microseconds, ours.microseconds), 1)}`;
    });
    return `| ${runtime} | ${cells.join(' | ')} |`;
  });
  return [header, rule, ...rows].join('\n');
}

/** Cold start per runtime and bundle: size, median time to the first body, and that over the empty worker's. */
export function coldStartTable(results: readonly ColdStartMeasurement[]): string {
  const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
  const header = '| runtime | bundle | minified · gzip | loaded at start | first body, median | over the empty worker |';
  const rule = '|---|---|---:|---:|---:|---:|';
  const rows = results.map(
    (r) =>
      `| ${r.runtime} | ${r.variant} | ${kb(r.bytes)} · ${kb(r.gzipBytes)} | ${r.modules > 1 ? `${kb(r.startBytes)} of ${r.modules} modules` : 'all'} | ${r.medianMs.toFixed(1)} ms | ${r.variant === 'empty worker' ? 'floor' : `+${r.overFloorMs.toFixed(1)} ms`} |`,
  );
  return [header, rule, ...rows].join('\n');
}

/** The issue's ratio goals per query: ≥ this fraction of the ceiling. */
const goals = [
  ['q1-get', 0.9],
  ['q1-post', 0.9],
  ['q2-post', 0.3],
] as const;

/** The issue's targets, each marked met or not, for what this run measured. */
export function targetLines(
  measurements: readonly Measurement[],
  edge: readonly EdgeMeasurement[],
  interleaved: readonly InterleavedMeasurement[] = [],
  saturated: readonly InterleavedMeasurement[] = [],
  coldStart: readonly ColdStartMeasurement[] = [],
): string[] {
  const lines: string[] = [];
  const find = (server: string, query: string) => measurements.find((m) => m.server === server && m.query === query);
  const mark = (ok: boolean) => (ok ? 'met' : 'NOT met');
  /** The ratio goal and the Mercurius goal for one req/s measure. */
  const throughput = (
    label: string,
    query: string,
    goal: number,
    r: number | undefined,
    ours: { requestsPerSecond: number } | undefined,
    mercurius: { requestsPerSecond: number } | undefined,
  ) => {
    if (r !== undefined) lines.push(`${label}${query} ≥ ${goal.toFixed(2)} of the ceiling: ${r.toFixed(3)}, ${mark(r >= goal)}`);
    if (ours && mercurius) {
      lines.push(
        `${label}${query} ahead of Mercurius: ${Math.round(ours.requestsPerSecond)} vs ${Math.round(mercurius.requestsPerSecond)} req/s, ${mark(ours.requestsPerSecond > mercurius.requestsPerSecond)}`,
      );
    }
  };
  for (const [query, goal] of goals) {
    const ours = find('skiff', query);
    throughput('target ', query, goal, ceilingRatio(ours, find('ceiling', query)), ours, find('mercurius', query));
  }
  // The same goals at saturation with all servers interleaved: req/s over the same moments.
  for (const [query, goal] of goals) {
    const ours = saturated.find((m) => m.server === 'skiff' && m.query === query);
    const mercurius = saturated.find((m) => m.server === 'mercurius' && m.query === query);
    throughput('interleaved at saturation: ', query, goal, ours?.throughputRatio, ours, mercurius);
  }
  // The same goals on server CPU per request at equal offered load (the interleaved part).
  for (const [query, goal] of goals) {
    const ours = interleaved.find((m) => m.server === 'skiff' && m.query === query);
    if (ours?.ratio !== undefined) {
      lines.push(`by CPU/req at equal load: ${query} ≥ ${goal.toFixed(2)} of the ceiling: ${ours.ratio.toFixed(3)}, ${mark(ours.ratio >= goal)}`);
    }
    const mercurius = interleaved.find((m) => m.server === 'mercurius' && m.query === query);
    if (ours && mercurius) {
      const cheaper = ratio(mercurius.cpuMicroseconds, ours.cpuMicroseconds);
      lines.push(
        `by CPU/req at equal load: ${query} cheaper than Mercurius: ${fixed(ours.cpuMicroseconds, 1, ' µs')} vs ${fixed(mercurius.cpuMicroseconds, 1, ' µs')}, ${cheaper === undefined ? 'not measured' : mark(cheaper > 1)}`,
      );
    }
  }
  for (const runtime of [...new Set(edge.map((e) => e.runtime))]) {
    if (runtime.startsWith('Node')) continue;
    for (const query of [...new Set(edge.map((e) => e.query))]) {
      const ours = edge.find((e) => e.runtime === runtime && e.query === query && e.impl === 'skiff');
      const plain = edge.find((e) => e.runtime === runtime && e.query === query && e.impl === 'graphql-http');
      if (!ours || !plain) continue;
      const speedup = ratio(plain.microseconds, ours.microseconds);
      lines.push(`target ${runtime} ${query} ≥ 2× graphql-http: ${times(speedup, 1)}, ${speedup === undefined ? 'not measured' : mark(speedup >= 2)}`);
    }
  }
  for (const ours of coldStart.filter((c) => c.variant === 'skiff')) {
    const peer = coldStart.find((c) => c.runtime === ours.runtime && c.variant === 'graphql-http');
    if (peer) {
      const over = ours.medianMs - peer.medianMs;
      lines.push(`cold start ${ours.runtime} at or below graphql-http's: ${over >= 0 ? '+' : ''}${over.toFixed(1)} ms against it, ${mark(over <= 0)}`);
    }
    if (ours.runtime.startsWith('workerd')) {
      lines.push(`cold start ${ours.runtime} within 40 ms of the empty worker: +${ours.overFloorMs.toFixed(1)} ms, ${mark(ours.overFloorMs <= 40)}`);
    }
  }
  return lines;
}

/** The interleaved slices at saturation: req/s, its ratio to the ceiling's, and server CPU per request. */
export function saturatedTable(
  results: readonly InterleavedMeasurement[],
  queries: readonly BenchQuery[],
  servers: readonly { name: string; label: string }[],
): string {
  const header = `| server | ${queries.map((q) => `${q.label} at saturation: req/s · ratio · server CPU/req`).join(' | ')} |`;
  const rule = `|---|${queries.map(() => '---:').join('|')}|`;
  const rows = servers.map(({ name, label }) => {
    const cells = queries.map((q) => {
      const m = results.find((r) => r.server === name && r.query === q.id);
      if (!m) return '–';
      const ratio = m.throughputRatio === undefined ? '–' : m.throughputRatio.toFixed(2);
      return `${Math.round(m.requestsPerSecond)} · ${ratio} · ${fixed(m.cpuMicroseconds, 1, ' µs')}${m.failures ? ` ⚠ ${m.failures} failed` : ''}`;
    });
    return `| ${label} | ${cells.join(' | ')} |`;
  });
  return [header, rule, ...rows].join('\n');
}

export function interleavedTable(
  results: readonly InterleavedMeasurement[],
  queries: readonly BenchQuery[],
  servers: readonly { name: string; label: string }[],
  sliceSeconds: number,
  slices: number,
): string {
  const header = `| server | ${queries
    .map((q) => {
      const rate = results.find((r) => r.query === q.id)?.rate;
      return `${q.label} at ${rate ?? '?'} req/s: server CPU/req · ratio`;
    })
    .join(' | ')} |`;
  const rule = `|---|${queries.map(() => '---:').join('|')}|`;
  const rows = servers.map(({ name, label }) => {
    const cells = queries.map((q) => {
      const m = results.find((r) => r.server === name && r.query === q.id);
      if (!m) return '–';
      const offered = (m.rate ?? 0) * sliceSeconds * slices;
      // A server that answered well under the offered load was saturated: its figure is not comparable.
      const short = m.requests < offered * 0.9 ? ` (answered ${Math.round((m.requests / offered) * 100)}%)` : '';
      return `${fixed(m.cpuMicroseconds, 1, ' µs')} · ${m.ratio === undefined ? '–' : m.ratio.toFixed(2)}${short}${m.failures ? ` ⚠ ${m.failures} failed` : ''}`;
    });
    return `| ${label} | ${cells.join(' | ')} |`;
  });
  return [header, rule, ...rows].join('\n');
}
