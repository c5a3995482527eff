// Cold start on the edge runtimes: each sample is a fresh instance of one bundle, timed from its
// creation to the body of its first Q1 GET.
// - workerd: a new `workerd serve` process per sample with the bundle's modules, as a deployment
//   loads them (cold-start/workerd-serve.ts).
// - Miniflare: a new Miniflare (one workerd process behind Miniflare's Node proxy) per sample.
// - Deno: a new module Worker (one isolate) per sample inside one Deno process, no code cache.
// Beside our bundle for that runtime run graphql-yoga and graphql-http on the same schema and data,
// and an empty worker answering a fixed string: the floor every other variant is reported against.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
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
import { workerdServeSample } from './cold-start/workerd-serve.ts';
import { wranglerCompatibilityDate, writeWorkerdConfig } from '../../test/support/workerd-serve.ts';

export const coldStartRuntimes = ['workerd', 'miniflare', 'deno'] as const;
export const coldStartVariants = ['empty worker', 'skiff', 'graphql-yoga', 'graphql-http'] as const;
type Variant = (typeof coldStartVariants)[number];
type Runtime = (typeof coldStartRuntimes)[number];

const runtimeLabels: Record<Runtime, string> = {
  workerd: 'workerd (workerd serve)',
  miniflare: 'workerd (Miniflare)',
  deno: 'Deno (module Worker)',
};

export interface ColdStartMeasurement {
  runtime: string;
  variant: Variant;
  /** Size of all the bundle's modules, minified, and the sum of their gzip sizes. */
  bytes: number;
  gzipBytes: number;
  /** The entry and the chunks it imports statically (all of `bytes` for a one-file bundle). */
  startBytes: number;
  modules: number;
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
  /** The directory of the entry module; `modules` are relative to it, the entry first. */
  dir: string;
  modules: string[];
  bytes: number;
  gzipBytes: number;
  startBytes: number;
}

/**
 * How the peers are bundled: the packages' worker/browser builds, as a Workers or Deno deploy would
 * pick them (yoga's fetch ponyfill otherwise resolves to its Node build).
 */
export const peerBuildOptions = { conditions: ['workerd', 'worker', 'browser'], mainFields: ['browser', 'module', 'main'] };

export async function peerBundles(outdir: string): Promise<Bundle[]> {
  const entries: [Variant, string][] = [
    ['empty worker', 'cold-start/empty-worker.ts'],
    ['graphql-yoga', 'cold-start/yoga-worker.ts'],
    ['graphql-http', 'cold-start/graphql-http-worker.ts'],
  ];
  return Promise.all(
    entries.map(async ([variant, entry]) => {
      const file = join(outdir, `${entry.replace(/^.*\//, '').replace(/\.ts$/, '')}.js`);
      await esbuild.build({
        ...edgeBuildOptions,
        ...peerBuildOptions,
        entryPoints: [join(here, entry)],
        outfile: file,
        format: 'esm',
      });
      const code = await readFile(file);
      return { variant, dir: outdir, modules: [basename(file)], bytes: code.byteLength, gzipBytes: gzipSync(code).byteLength, startBytes: code.byteLength };
    }),
  );
}

const expectedQ1 = JSON.parse(expectedBodies().get('q1-get')!) as unknown;

/** Fails the run when a variant's first answer is not graphql-js's answer to Q1. */
export function checkBody(variant: string, body: string): void {
  if (variant === 'empty worker') return;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {}
  if (!isDeepStrictEqual(parsed, expectedQ1)) throw new Error(`cold start: ${variant} answered ${body.slice(0, 200)}`);
}

/** Each round starts every bundle once, in an order that rotates from round to round. */
async function rotating(
  bundles: Bundle[],
  samples: number,
  sample: (bundle: Bundle) => Promise<{ ms: number; body: string }>,
): Promise<Map<Variant, number[]>> {
  const times = new Map<Variant, number[]>();
  for (let i = 0; i < samples; i++) {
    for (let v = 0; v < bundles.length; v++) {
      const b = bundles[(v + i) % bundles.length];
      const { ms, body } = await sample(b);
      checkBody(b.variant, body);
      (times.get(b.variant) ?? times.set(b.variant, []).get(b.variant)!).push(ms);
    }
  }
  return times;
}

async function workerdServeSamples(bundles: Bundle[], samples: number, compatibilityDate: string, outdir: string): Promise<Map<Variant, number[]>> {
  const configs = new Map<Bundle, string>();
  for (const [i, b] of bundles.entries()) configs.set(b, await writeWorkerdConfig(join(outdir, `workerd-${i}`), b, compatibilityDate));
  return rotating(bundles, samples, (b) => workerdServeSample(configs.get(b)!, q1Path));
}

async function miniflareSamples(bundles: Bundle[], samples: number, compatibilityDate: string): Promise<Map<Variant, number[]>> {
  const { Miniflare } = await import('miniflare');
  // The modules are handed over as read: given only a path, Miniflare first parses the script with
  // acorn in Node to look for imports, a cost of the tool that grows with the code and that a
  // deployed Worker never pays.
  const contents = new Map<Bundle, { type: 'ESModule'; path: string; contents: string }[]>();
  for (const b of bundles) {
    contents.set(
      b,
      await Promise.all(b.modules.map(async (m) => ({ type: 'ESModule' as const, path: join(b.dir, m), contents: await readFile(join(b.dir, m), 'utf8') }))),
    );
  }
  return rotating(bundles, samples, async (b) => {
    const started = performance.now();
    const mf = new Miniflare({ modules: contents.get(b)!, modulesRoot: b.dir, compatibilityDate });
    try {
      const body = await within(
        30_000,
        `Miniflare: ${b.variant} gave no first answer`,
        (async () => {
          const res = await mf.dispatchFetch(`http://localhost${q1Path}`);
          return res.text();
        })(),
      );
      return { ms: performance.now() - started, body };
    } finally {
      await within(15_000, 'Miniflare did not shut down', mf.dispose());
    }
  });
}

async function denoSamples(bundles: Bundle[], samples: number, outdir: string): Promise<Map<Variant, number[]>> {
  const planFile = join(outdir, 'deno-plan.json');
  await writeFile(
    planFile,
    JSON.stringify({ samples, path: q1Path, variants: bundles.map((b) => ({ name: b.variant, file: pathToFileURL(join(b.dir, b.modules[0])).href })) }),
  );
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
  // A median needs at least one sample: with none it would be NaN in every table and target line.
  if (!Number.isInteger(options.samples) || options.samples < 1)
    throw new RangeError(`cold start: samples must be a positive integer (got ${options.samples})`);
  const outdir = await mkdtemp(join(tmpdir(), 'skiff-bench-cold-'));
  const results: ColdStartMeasurement[] = [];
  try {
    const [ours, peers] = await Promise.all([build({ outdir, quiet: true }), peerBundles(outdir)]);
    const compatibilityDate = await wranglerCompatibilityDate();
    for (const runtime of options.runtimes as Runtime[]) {
      const own = ours.find((s) => s.name === (runtime === 'deno' ? 'deno.js' : 'workerd.js'))!;
      const skiff: Bundle = {
        variant: 'skiff',
        dir: dirname(own.file),
        modules: own.modules,
        bytes: own.bytes,
        gzipBytes: own.gzipBytes,
        startBytes: own.startBytes,
      };
      const bundles = [skiff, ...peers];
      const label = runtimeLabels[runtime];
      options.log(`  ${label}: ${options.samples} fresh instances per variant`);
      const times =
        runtime === 'workerd'
          ? await workerdServeSamples(bundles, options.samples, compatibilityDate, outdir)
          : runtime === 'miniflare'
            ? await miniflareSamples(bundles, options.samples, compatibilityDate)
            : await denoSamples(bundles, options.samples, outdir);
      const floor = median(times.get('empty worker')!);
      for (const b of bundles) {
        const samples = times.get(b.variant)!;
        const medianMs = median(samples);
        results.push({
          runtime: label,
          variant: b.variant,
          bytes: b.bytes,
          gzipBytes: b.gzipBytes,
          startBytes: b.startBytes,
          modules: b.modules.length,
          medianMs,
          overFloorMs: medianMs - floor,
          samples,
        });
        options.log(`    ${b.variant.padEnd(13)} median ${medianMs.toFixed(1)} ms (+${(medianMs - floor).toFixed(1)} ms over the floor)`);
      }
    }
  } finally {
    await rm(outdir, { recursive: true, force: true });
  }
  return results;
}
