// Where a cold start goes, in instructions rather than milliseconds, in workerd and in Deno. Each
// bundle starts fresh under valgrind's callgrind and answers one Q1 GET:
// - workerd: a fresh `workerd serve`, split into compiling the Worker's modules (V8 CompileModule),
//   evaluating them (Module::Evaluate) and the rest (the first request, and workerd's own start and
//   exit, which the empty worker shows alone);
// - Deno: `deno run` starting one module Worker (a fresh isolate) that imports the bundle and answers,
//   with V8 kept to that isolate's thread (--single-threaded). Deno's module cache is filled by a first
//   run that is not counted, as a deployed server's is.
// Only the thread that runs the isolate is counted: the first answer waits for it alone, and V8's
// background tasks (a few million instructions that run in some starts and not in others) would make
// the totals jump. Counted so, they repeat to a fraction of a percent whatever else the machine is
// doing, which resolves differences the wall-clock bench cannot. Besides the bundles as deployed, two
// rows take the distance to graphql-http apart: our workerd bundle without the chunks a first query
// never imports (workerd compiles every module it is given), and our handler with its optional parts
// off. Needs valgrind (Debian's package).
//
//   npx tsx bench/graphql/cold-start-instructions.ts [--runs N] [--runtimes workerd,deno]
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { build, buildTarget } from '../../scripts/build-edge.mjs';
import { denoBinary } from '../../test/support/graphql-edge.ts';
import { within } from '../../test/support/graphql-fixtures.ts';
import { runCommand } from '../../test/support/commands.ts';
import { spawnWorkerd, wranglerCompatibilityDate, writeWorkerdConfig } from '../../test/support/workerd-serve.ts';
import { checkBody, peerBundles } from './cold-start-bench.ts';
import { getPath, Q1 } from './queries.ts';
import { median } from './stats.ts';

const { values: args } = parseArgs({
  options: { runs: { type: 'string', default: '2' }, runtimes: { type: 'string', default: 'workerd,deno' }, help: { type: 'boolean', short: 'h' } },
});
if (args.help) {
  console.log(`usage: npx tsx bench/graphql/cold-start-instructions.ts [--runs N] [--runtimes workerd,deno]
  instructions of a cold start per bundle (valgrind callgrind), the median of N runs (default 2),
  in workerd serve and in a Deno module Worker (default both)`);
  process.exit(0);
}
const runs = Number(args.runs);
if (!Number.isInteger(runs) || runs < 1) {
  console.error(`--runs must be a positive integer (got "${args.runs}")`);
  process.exit(2);
}
const runtimes = args.runtimes.split(',');
const unknown = runtimes.filter((r) => r !== 'workerd' && r !== 'deno');
if (unknown.length > 0 || runtimes.length === 0) {
  console.error(`--runtimes takes workerd and deno, comma-separated (got "${args.runtimes}")`);
  process.exit(2);
}

// Present is enough (callgrind_annotate --version exits non-zero).
const missing = (tool: string) =>
  new Promise<boolean>((resolve) => execFile(tool, ['--version'], (error) => resolve((error as NodeJS.ErrnoException | null)?.code === 'ENOENT')));
for (const tool of ['valgrind', 'callgrind_annotate']) {
  if (await missing(tool)) {
    console.error(`${tool} is missing: install Debian's valgrind package (apt-get install valgrind)`);
    process.exit(2);
  }
}

const q1Path = getPath('/graphql', Q1);
const callgrind = ['valgrind', '--tool=callgrind', '--separate-threads=yes', '--smc-check=all-non-file'];

interface Phases {
  total: number;
  compile: number;
  evaluate: number;
}

/** The phases of one thread's callgrind file. */
async function phases(file: string): Promise<Phases> {
  const annotate = await runCommand('callgrind_annotate', ['--inclusive=yes', '--threshold=100', file], { timeoutMs: 120_000 });
  if (annotate.code !== 0) throw new Error(`callgrind_annotate failed: ${annotate.stderr}`);
  const annotated = annotate.stdout;
  const inclusive = (symbol: string) => {
    const line = annotated.split('\n').find((l) => l.includes(symbol));
    return line ? Number(line.trim().split(/\s+/)[0].replaceAll(',', '')) : 0;
  };
  const total = Number(/([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS/.exec(annotated)?.[1].replaceAll(',', '') ?? 0);
  return { total, compile: inclusive('v8::ScriptCompiler::CompileModule('), evaluate: inclusive('v8::Module::Evaluate(') };
}

/** One workerd run: it starts, answers Q1 once, and exits on SIGTERM; its main thread runs the isolate. */
async function workerdRun(worker: Variant, workdir: string, compatibilityDate: string, run: number): Promise<Phases> {
  const config = await writeWorkerdConfig(join(workdir, `config-${worker.slug}`), worker, compatibilityDate);
  const out = join(workdir, `workerd-${worker.slug}-${run}.out`);
  const served = await spawnWorkerd(config, [...callgrind, `--callgrind-out-file=${out}`]);
  const exited = new Promise<void>((resolve) => served.child.once('exit', () => resolve()));
  try {
    // Under valgrind workerd takes seconds to start; the request waits in the socket's queue.
    const body = await within(
      120_000,
      'workerd under valgrind did not answer',
      Promise.race([served.exited, fetch(`${served.origin}${q1Path}`).then((res) => res.text())]),
    );
    checkBody(worker.name, body);
  } finally {
    served.child.kill('SIGTERM');
    await within(120_000, 'workerd under valgrind did not exit', exited);
  }
  return phases(`${out}-01`);
}

const denoHarness = fileURLToPath(new URL('./cold-start/deno-isolates.ts', import.meta.url));

/**
 * One Deno run: `deno run` starts one module Worker that imports the bundle and answers Q1. The
 * Worker's thread is the busiest one besides Deno's main thread.
 */
async function denoRun(worker: Variant, workdir: string, run: number | 'warm-up'): Promise<Phases> {
  const plan = join(workdir, `deno-plan-${worker.slug}.json`);
  await writeFile(
    plan,
    JSON.stringify({ samples: 1, path: q1Path, variants: [{ name: worker.name, file: pathToFileURL(join(worker.dir, worker.modules[0])).href }] }),
  );
  const out = join(workdir, `deno-${worker.slug}-${run}.out`);
  const ran = await runCommand(
    callgrind[0],
    [
      ...callgrind.slice(1),
      `--callgrind-out-file=${out}`,
      await realpath(denoBinary),
      'run',
      '--v8-flags=--single-threaded',
      '--no-code-cache',
      '--allow-read',
      '--allow-env',
      denoHarness,
      plan,
    ],
    { env: { DENO_DIR: join(workdir, 'deno-dir'), DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' }, timeoutMs: 300_000 },
  );
  const answered = ran.code === 0 ? (JSON.parse(ran.stdout) as { bodies: Record<string, string> }).bodies[worker.name] : undefined;
  if (answered === undefined) throw new Error(`deno did not answer Q1 for ${worker.name}: ${ran.stderr.slice(-1000)}`);
  checkBody(worker.name, answered);
  let busiest = { file: '', instructions: -1 };
  for (const file of await readdir(workdir)) {
    if (!file.startsWith(`${basename(out)}-`) || file.endsWith('-01')) continue;
    const summary = /^summary: (\d+)/m.exec(await readFile(join(workdir, file), 'utf8'));
    const instructions = Number(summary?.[1] ?? -1);
    if (instructions > busiest.instructions) busiest = { file: join(workdir, file), instructions };
  }
  if (busiest.file === '') throw new Error(`callgrind wrote no thread of the Deno Worker for ${worker.name}`);
  return phases(busiest.file);
}

interface Variant {
  name: string;
  slug: string;
  dir: string;
  /** The entry first; workerd is given all of them. */
  modules: string[];
  bytes: number;
}

const workdir = await mkdtemp(join(tmpdir(), 'skiff-bench-instructions-'));
try {
  const edgeDir = join(workdir, 'edge');
  const [ours, peers] = await Promise.all([build({ outdir: edgeDir, quiet: true }), peerBundles(workdir)]);
  const bare = await buildTarget(
    { entry: 'bench/graphql/cold-start/skiff-bare-worker.ts', out: 'skiff-bare.js', format: 'esm', split: true, codegen: false },
    edgeDir,
  );
  const variant = (name: string, bundle: { file: string; modules: string[] }, modules = bundle.modules): Variant => ({
    name,
    slug: name.replaceAll(/[^a-z]+/g, '-'),
    dir: dirname(bundle.file),
    modules,
    bytes: 0,
  });
  const peer = (name: string) => {
    const p = peers.find((b) => b.variant === name)!;
    return { ...variant(name, { file: join(p.dir, p.modules[0]), modules: p.modules }), bytes: p.bytes };
  };
  const compatibilityDate = await wranglerCompatibilityDate();
  const m = (n: number) => `${(n / 1e6).toFixed(1)} M`;
  for (const runtime of runtimes) {
    const own = ours.find((s) => s.name === (runtime === 'deno' ? 'deno.js' : 'workerd.js'))!;
    const variants: Variant[] = [
      { ...variant('skiff', own), bytes: own.bytes },
      ...(runtime === 'workerd' ? [{ ...variant('skiff, on-demand chunks left out', own, own.startModules), bytes: own.startBytes }] : []),
      { ...variant('skiff, optional parts off, on-demand chunks left out', bare, bare.startModules), bytes: bare.startBytes },
      peer('graphql-http'),
      peer('empty worker'),
    ];
    const results = new Map<string, Phases>();
    for (const v of variants) {
      if (runtime === 'deno') await denoRun(v, workdir, 'warm-up');
      const samples: Phases[] = [];
      for (let i = 0; i < runs; i++) {
        samples.push(runtime === 'deno' ? await denoRun(v, workdir, i) : await workerdRun(v, workdir, compatibilityDate, i));
        console.error(`  ${runtime}, ${v.name}: run ${i + 1} of ${runs}, ${m(samples[i].total)} instructions`);
      }
      results.set(v.name, {
        total: median(samples.map((s) => s.total)),
        compile: median(samples.map((s) => s.compile)),
        evaluate: median(samples.map((s) => s.evaluate)),
      });
    }
    const floor = results.get('empty worker')!;
    const reference = results.get('graphql-http')!;
    // Deno's binary has no symbols to split the phases by: its rows give the total alone.
    const split = runtime === 'workerd';
    const heading = split
      ? 'workerd serve, Q1 once | modules given | compile modules | evaluate | first request and the rest'
      : 'Deno module Worker, Q1 once | modules given';
    console.log(`\n| ${heading} | total | over the empty worker | against graphql-http |`);
    console.log(`|---|---:|${split ? '---:|---:|---:|' : ''}---:|---:|---:|`);
    for (const v of variants) {
      const r = results.get(v.name)!;
      const phaseCells = split ? ` ${m(r.compile)} | ${m(r.evaluate)} | ${m(r.total - r.compile - r.evaluate)} |` : '';
      const overFloor = v.name === 'empty worker' ? 'floor' : `+${m(r.total - floor.total)}`;
      const against = r.total - reference.total;
      const againstCell = v.name === 'graphql-http' ? 'reference' : `${against >= 0 ? '+' : ''}${m(against)}`;
      console.log(`| ${v.name} | ${(v.bytes / 1024).toFixed(1)} KB |${phaseCells} ${m(r.total)} | ${overFloor} | ${againstCell} |`);
    }
  }
} finally {
  await rm(workdir, { recursive: true, force: true });
}
