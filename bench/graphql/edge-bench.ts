// In-process handler cost on the edge runtimes: our handler against graphql-http's plain fetch
// handler, both bundled the way the edge bundles are (neutral platform, no `new Function` needed),
// looping inside workerd (Miniflare) and Deno, plus Node for reference.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';
import { edgeBuildOptions } from '../../scripts/build-edge.mjs';
import { benchQueries } from './queries.ts';
import { startDeno } from '../../test/support/graphql-edge.ts';
import { within } from '../../test/support/graphql-fixtures.ts';
import { median } from './stats.ts';

const workerEntry = fileURLToPath(new URL('./edge/loop-worker.ts', import.meta.url));
export const edgeImpls = ['skiff', 'graphql-http'] as const;

export interface EdgeMeasurement {
  runtime: string;
  impl: (typeof edgeImpls)[number];
  query: string;
  /** Median wall time per handled request, in microseconds. */
  microseconds: number;
}

interface LoopTarget {
  runtime: string;
  loop(impl: string, query: string, n: number): Promise<void>;
  stop(): Promise<void>;
}

async function bundle(outdir: string): Promise<string> {
  const outfile = join(outdir, 'loop-worker.js');
  await esbuild.build({ ...edgeBuildOptions, entryPoints: [workerEntry], outfile, format: 'esm' });
  return outfile;
}

async function checked(response: { status: number; text(): Promise<string> }, what: string): Promise<void> {
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${what}: ${response.status} ${text}`);
}

function loopPath(impl: string, query: string, n: number): string {
  return `/loop?impl=${impl}&query=${query}&n=${n}`;
}

async function startNode(file: string): Promise<LoopTarget> {
  const worker = (await import(pathToFileURL(file).href)).default as { fetch(r: Request): Promise<Response> };
  return {
    runtime: 'Node (in this process)',
    loop: async (impl, query, n) => checked(await worker.fetch(new Request(`http://localhost${loopPath(impl, query, n)}`)), 'node loop'),
    stop: async () => {},
  };
}

async function startWorkerd(file: string): Promise<LoopTarget> {
  const { Miniflare } = await import('miniflare');
  const mf = new Miniflare({ modules: true, scriptPath: file, modulesRoot: join(file, '..'), compatibilityDate: '2025-01-01' });
  await within(60_000, 'workerd (Miniflare) did not start', mf.ready);
  return {
    runtime: 'workerd (Miniflare)',
    loop: async (impl, query, n) => checked(await mf.dispatchFetch(`http://localhost${loopPath(impl, query, n)}`), 'workerd loop'),
    stop: () => mf.dispose(),
  };
}

/** `deno serve` on the loop worker, started by the tests' runtime harness (test/support/graphql-edge.ts). */
async function startDenoLoop(file: string): Promise<LoopTarget> {
  const deno = await startDeno([file], { startupMs: 60_000 });
  return {
    runtime: 'Deno',
    // A loop call takes longer than the harness's per-request bound: plain fetch, own deadline.
    loop: async (impl, query, n) => checked(await fetch(deno.origin + loopPath(impl, query, n), { signal: AbortSignal.timeout(120_000) }), 'deno loop'),
    stop: deno.stop,
  };
}

export const edgeRuntimes = ['workerd', 'deno', 'node'] as const;

export interface EdgeOptions {
  runtimes: readonly string[];
  /** Timed batches per cell; the median batch counts. */
  batches: number;
  /** Requests per batch for Q1 (Q2, 25 KB of output each, gets a fifth). */
  requests: number;
  log(line: string): void;
}

/** Measures every (runtime, handler, query) cell, alternating the handlers batch by batch. */
export async function runEdgeBench(options: EdgeOptions): Promise<EdgeMeasurement[]> {
  const outdir = await mkdtemp(join(tmpdir(), 'skiff-bench-edge-'));
  const results: EdgeMeasurement[] = [];
  try {
    const file = await bundle(outdir);
    const starters: Record<string, (f: string) => Promise<LoopTarget>> = { workerd: startWorkerd, deno: startDenoLoop, node: startNode };
    for (const name of options.runtimes) {
      const target = await starters[name](file);
      try {
        options.log(`  ${target.runtime}`);
        for (const q of benchQueries) {
          const n = q.large ? Math.max(1, Math.round(options.requests / 5)) : options.requests;
          // Warm both handlers up (JIT, document caches) before any timed batch.
          for (const impl of edgeImpls) await target.loop(impl, q.id, n);
          const samples: Record<string, number[]> = { skiff: [], 'graphql-http': [] };
          for (let b = 0; b < options.batches; b++) {
            // Alternate which handler goes first, so drift on a shared machine hits both alike.
            const order = b % 2 === 0 ? edgeImpls : [...edgeImpls].reverse();
            for (const impl of order) {
              const started = performance.now();
              await target.loop(impl, q.id, n);
              samples[impl].push(((performance.now() - started) * 1000) / n);
            }
          }
          for (const impl of edgeImpls) {
            results.push({ runtime: target.runtime, impl, query: q.id, microseconds: median(samples[impl]) });
          }
        }
      } finally {
        await target.stop();
      }
    }
  } finally {
    await rm(outdir, { recursive: true, force: true });
  }
  return results;
}
