// Cold start on the edge runtimes: each sample is a fresh instance of one bundle, timed from its
// creation to the body of its first Q1 GET. workerd: a new Miniflare (one workerd process) per
// sample. Deno: a new module Worker (one isolate) per sample inside one Deno process. Beside our
// workerd and Deno bundles run graphql-yoga and graphql-http on the same schema, and an empty worker
// answering a fixed string: the floor every other variant is reported against.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';
import { build, edgeBuildOptions } from '../../scripts/build-edge.mjs';
import { denoBinary } from '../../test/support/graphql-edge.ts';
import { within } from '../../test/support/graphql-fixtures.ts';
import { getPath, Q1 } from './queries.ts';
import { expectedBodies } from './servers.ts';
import { median } from './stats.ts';

export const coldStartRuntimes = ['workerd', 'deno'] as const;
export const coldStartVariants = ['empty worker', 'skiff', 'graphql-yoga', 'graphql-http'] as const;
type Variant = (typeof coldStartVariants)[number];

export interface ColdStartMeasurement {
  runtime: string;
  variant: Variant;
  /** Bundle size, minified and gzip-compressed. */
  bytes: number;
  gzipBytes: number;
  /** Median creation-to-first-body time over the samples, and that median minus the floor's. */
  medianMs: number;
  overFloorMs: number;
  samples: number[];
}

export interface ColdStartOptions {
  runtimes: readonly string[];
  samples: number;
  log(line: string): void;
}

const here = fileURLToPath(new URL('.', import.meta.url));
const q1Path = getPath('/graphql', Q1);

interface Bundle {
  variant: Variant;
  file: string;
  bytes: number;
  gzipBytes: number;
}

async function peerBundles(outdir: string): Promise<Bundle[]> {
  const entries: [Variant, string][] = [
    ['empty worker', 'cold-start/empty-worker.ts'],
    ['graphql-yoga', 'cold-start/yoga-worker.ts'],
    ['graphql-http', 'cold-start/graphql-http-worker.ts'],
  ];
  return Promise.all(
    entries.map(async ([variant, entry]) => {
      const file = join(outdir, `${entry.replace(/^.*\//, '').replace(/\.ts$/, '')}.js`);
      // The packages' worker/browser builds, as a Workers or Deno deploy would pick them (yoga's
      // fetch ponyfill otherwise resolves to its Node build).
      await esbuild.build({
        ...edgeBuildOptions,
        conditions: ['workerd', 'worker', 'browser'],
        mainFields: ['browser', 'module', 'main'],
        entryPoints: [join(here, entry)],
        outfile: file,
        format: 'esm',
      });
      const code = await readFile(file);
      return { variant, file, bytes: code.byteLength, gzipBytes: gzipSync(code).byteLength };
    }),
  );
}

const expectedQ1 = JSON.parse(expectedBodies().get('q1-get')!) as unknown;

/** Fails the run when a variant's first answer is not graphql-js's answer to Q1. */
function checkBody(variant: string, body: string): void {
  if (variant === 'empty worker') return;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {}
  if (!isDeepStrictEqual(parsed, expectedQ1)) throw new Error(`cold start: ${variant} answered ${body.slice(0, 200)}`);
}

async function workerdSamples(bundles: Bundle[], samples: number, compatibilityDate: string): Promise<Map<Variant, number[]>> {
  const { Miniflare } = await import('miniflare');
  const times = new Map<Variant, number[]>();
  const codes = new Map(await Promise.all(bundles.map(async (b) => [b.file, await readFile(b.file, 'utf8')] as const)));
  for (let i = 0; i < samples; i++) {
    for (let v = 0; v < bundles.length; v++) {
      const b = bundles[(v + i) % bundles.length];
      // The module is handed over as read: given only a path, Miniflare first parses the script with
      // acorn in Node to look for imports, a cost of the tool that grows with the code and that
      // a deployed Worker never pays.
      const contents = codes.get(b.file)!;
      const started = performance.now();
      const mf = new Miniflare({ modules: [{ type: 'ESModule', path: b.file, contents }], modulesRoot: dirname(b.file), compatibilityDate });
      try {
        const body = await within(
          30_000,
          `workerd: ${b.variant} gave no first answer`,
          (async () => {
            const res = await mf.dispatchFetch(`http://localhost${q1Path}`);
            return res.text();
          })(),
        );
        const ms = performance.now() - started;
        checkBody(b.variant, body);
        (times.get(b.variant) ?? times.set(b.variant, []).get(b.variant)!).push(ms);
      } finally {
        await within(15_000, 'Miniflare did not shut down', mf.dispose());
      }
    }
  }
  return times;
}

async function denoSamples(bundles: Bundle[], samples: number, outdir: string): Promise<Map<Variant, number[]>> {
  const planFile = join(outdir, 'deno-plan.json');
  await writeFile(planFile, JSON.stringify({ samples, path: q1Path, variants: bundles.map((b) => ({ name: b.variant, file: pathToFileURL(b.file).href })) }));
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(
      denoBinary,
      // No V8 code cache: every isolate compiles the bundle as a first deployment would.
      ['run', '--no-code-cache', '--allow-read', '--allow-env', join(here, 'cold-start/deno-isolates.ts'), planFile],
      { env: { ...process.env, DENO_DIR: join(outdir, 'deno-dir'), DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' }, timeout: 600_000, maxBuffer: 16 << 20 },
      (error, out, err) => (error ? reject(new Error(`deno cold-start run failed: ${error.message}\n${err}`)) : resolve(out)),
    );
  });
  const { results, bodies } = JSON.parse(stdout) as { results: Record<Variant, number[]>; bodies: Record<Variant, string> };
  for (const [variant, body] of Object.entries(bodies)) checkBody(variant, body);
  return new Map(Object.entries(results) as [Variant, number[]][]);
}

export async function runColdStartBench(options: ColdStartOptions): Promise<ColdStartMeasurement[]> {
  const outdir = await mkdtemp(join(tmpdir(), 'skiff-bench-cold-'));
  const results: ColdStartMeasurement[] = [];
  try {
    const [ours, peers] = await Promise.all([build({ outdir, quiet: true }), peerBundles(outdir)]);
    const wrangler = await readFile(new URL('../../wrangler.toml', import.meta.url), 'utf8');
    const compatibilityDate = /compatibility_date\s*=\s*"([^"]+)"/.exec(wrangler)?.[1] ?? '2025-01-01';
    for (const runtime of options.runtimes) {
      const own = ours.find((s) => s.name === `${runtime}.js`)!;
      const bundles: Bundle[] = [{ variant: 'skiff', file: own.file, bytes: own.bytes, gzipBytes: own.gzipBytes }, ...peers];
      const label = runtime === 'workerd' ? 'workerd (Miniflare)' : 'Deno (module Worker)';
      options.log(`  ${label}: ${options.samples} fresh instances per variant`);
      const times =
        runtime === 'workerd' ? await workerdSamples(bundles, options.samples, compatibilityDate) : await denoSamples(bundles, options.samples, outdir);
      const floor = median(times.get('empty worker')!);
      for (const b of bundles) {
        const samples = times.get(b.variant)!;
        const medianMs = median(samples);
        results.push({ runtime: label, variant: b.variant, bytes: b.bytes, gzipBytes: b.gzipBytes, medianMs, overFloorMs: medianMs - floor, samples });
        options.log(`    ${b.variant.padEnd(13)} median ${medianMs.toFixed(1)} ms (+${(medianMs - floor).toFixed(1)} ms over the floor)`);
      }
    }
  } finally {
    await rm(outdir, { recursive: true, force: true });
  }
  return results;
}
