// Every server running at once and the load moving between them in short slices, at one fixed
// request rate (server CPU per request) or at saturation (req/s). Each server then sees the same
// moments of the machine, so background load that comes and goes (this machine is shared) lands on
// all of them alike; the one-at-a-time req/s figures cannot offer that.
import { loadSlice, startServerProcess, type StartedServer } from './http-bench.ts';
import type { BenchQuery } from './queries.ts';
import { fixed, ratio } from './figures.ts';

export interface InterleavedOptions {
  servers: readonly string[];
  queries: readonly BenchQuery[];
  /** Slices per server and query. */
  slices: number;
  sliceSeconds: number;
  connections: number;
  /**
   * Offered load in req/s for a query (below what the slowest server answers keeps it equal), or
   * undefined for as much as each server answers (saturation).
   */
  rate: (q: BenchQuery) => number | undefined;
  log: (line: string) => void;
}

export interface InterleavedMeasurement {
  server: string;
  query: BenchQuery['id'];
  /** Offered req/s; null at saturation. */
  rate: number | null;
  requests: number;
  /** Requests answered per second of this server's slices. */
  requestsPerSecond: number;
  /** This server's req/s divided by the ceiling's over the same slices (meaningful at saturation). */
  throughputRatio?: number;
  /** Server CPU (user + system) per request, µs; undefined when no request or no CPU time was measured. */
  cpuMicroseconds: number | undefined;
  /** The ceiling's CPU per request divided by this server's: 1.0 costs what serving fixed bytes costs. */
  ratio?: number;
  failures: number;
}

export async function runInterleaved(options: InterleavedOptions): Promise<InterleavedMeasurement[]> {
  const running: { name: string; server: StartedServer }[] = [];
  const results: InterleavedMeasurement[] = [];
  try {
    for (const name of options.servers) running.push({ name, server: await startServerProcess(name) });
    for (const q of options.queries) {
      const rate = options.rate(q);
      const totals = running.map(() => ({ requests: 0, cpu: 0, failures: 0 }));
      // Unmeasured first slice each: JIT, caches, graphql-jit's compilation.
      for (const { server } of running) await loadSlice(server, q, { connections: options.connections, seconds: options.sliceSeconds, rate });
      for (let slice = 0; slice < options.slices; slice++) {
        // Alternate the direction so no server always follows the same one.
        const order = slice % 2 === 0 ? running.map((_, i) => i) : running.map((_, i) => running.length - 1 - i);
        for (const i of order) {
          const r = await loadSlice(running[i].server, q, { connections: options.connections, seconds: options.sliceSeconds, rate });
          totals[i].requests += r.requests;
          totals[i].cpu += r.cpuSeconds;
          totals[i].failures += r.failures;
        }
      }
      const measured = running.map(({ name }, i) => ({
        server: name,
        query: q.id,
        rate: rate ?? null,
        requests: totals[i].requests,
        requestsPerSecond: totals[i].requests / (options.slices * options.sliceSeconds),
        cpuMicroseconds: ratio(totals[i].cpu * 1e6, totals[i].requests),
        failures: totals[i].failures,
      }));
      const ceiling = measured.find((m) => m.server === 'ceiling');
      for (const m of measured) {
        const withRatio: InterleavedMeasurement = ceiling
          ? { ...m, ratio: ratio(ceiling.cpuMicroseconds, m.cpuMicroseconds), throughputRatio: ratio(m.requests, ceiling.requests) }
          : m;
        results.push(withRatio);
        const figure =
          rate === undefined
            ? `${Math.round(m.requestsPerSecond).toString().padStart(7)} req/s${withRatio.throughputRatio !== undefined ? `  ratio ${withRatio.throughputRatio.toFixed(2)}` : ''}  ${fixed(m.cpuMicroseconds, 1, ' µs')} CPU/req`
            : `${fixed(m.cpuMicroseconds, 1, ' µs').padStart(10)} CPU/req at ${rate} req/s${withRatio.ratio !== undefined ? `  ratio ${withRatio.ratio.toFixed(2)}` : ''}`;
        options.log(`  ${q.label.padEnd(8)} ${m.server.padEnd(10)} ${figure}${m.failures ? `  ${m.failures} FAILED` : ''}`);
      }
    }
  } finally {
    await Promise.all(running.map(({ server }) => server.stop()));
  }
  return results;
}
