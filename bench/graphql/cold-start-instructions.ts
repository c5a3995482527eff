// Where a workerd cold start goes, in instructions rather than milliseconds: each bundle starts in a
// fresh `workerd serve` under valgrind's callgrind, answers one Q1 GET and exits, and the run is split
// into compiling the Worker's modules (V8 CompileModule), evaluating them (Module::Evaluate) and the
// rest (the first request, and workerd's own start and exit, which the empty worker shows alone).
// Instruction counts repeat to a fraction of a percent whatever else the machine is doing, so this
// resolves differences the wall-clock bench cannot. Needs valgrind (Debian's package).
//
//   npx tsx bench/graphql/cold-start-instructions.ts [--runs N]
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { build } from '../../scripts/build-edge.mjs';
import { within } from '../../test/support/graphql-fixtures.ts';
import { runCommand } from '../../test/support/commands.ts';
import { spawnWorkerd, wranglerCompatibilityDate, writeWorkerdConfig } from '../../test/support/workerd-serve.ts';
import { peerBundles } from './cold-start-bench.ts';
import { getPath, Q1 } from './queries.ts';
import { median } from './stats.ts';

const { values: args } = parseArgs({ options: { runs: { type: 'string', default: '2' }, help: { type: 'boolean', short: 'h' } } });
if (args.help) {
  console.log(
    'usage: npx tsx bench/graphql/cold-start-instructions.ts [--runs N]\n  instructions of a workerd cold start per bundle (valgrind callgrind), median of N runs (default 2)',
  );
  process.exit(0);
}
const runs = Number(args.runs);
if (!Number.isInteger(runs) || runs < 1) {
  console.error(`--runs must be a positive integer (got "${args.runs}")`);
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

interface Phases {
  total: number;
  compile: number;
  evaluate: number;
}

/** One run under callgrind: workerd starts, answers Q1 once, and exits on SIGTERM. */
async function instructions(config: string, workdir: string, runIndex: number): Promise<Phases> {
  const out = join(workdir, `callgrind-${runIndex}.out`);
  const served = await spawnWorkerd(config, ['valgrind', '--tool=callgrind', '--smc-check=all-non-file', `--callgrind-out-file=${out}`]);
  const exited = new Promise<void>((resolve) => served.child.once('exit', () => resolve()));
  try {
    // Under valgrind workerd takes seconds to start; the request waits in the socket's queue.
    await within(120_000, 'workerd under valgrind did not answer', Promise.race([served.exited, fetch(`${served.origin}${q1Path}`).then((res) => res.text())]));
  } finally {
    served.child.kill('SIGTERM');
    await within(120_000, 'workerd under valgrind did not exit', exited);
  }
  const annotate = await runCommand('callgrind_annotate', ['--inclusive=yes', '--threshold=100', out], { timeoutMs: 120_000 });
  if (annotate.code !== 0) throw new Error(`callgrind_annotate failed: ${annotate.stderr}`);
  const annotated = annotate.stdout;
  const inclusive = (symbol: string) => {
    const line = annotated.split('\n').find((l) => l.includes(symbol));
    return line ? Number(line.trim().split(/\s+/)[0].replaceAll(',', '')) : 0;
  };
  const total = Number(/([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS/.exec(annotated)?.[1].replaceAll(',', '') ?? 0);
  return { total, compile: inclusive('v8::ScriptCompiler::CompileModule('), evaluate: inclusive('v8::Module::Evaluate(') };
}

const workdir = await mkdtemp(join(tmpdir(), 'skiff-bench-instructions-'));
try {
  const [ours, peers] = await Promise.all([build({ outdir: join(workdir, 'edge'), quiet: true }), peerBundles(workdir)]);
  const own = ours.find((s) => s.name === 'workerd.js')!;
  const variants = [
    { name: 'skiff', dir: dirname(own.file), modules: own.modules, bytes: own.bytes },
    ...peers.filter((p) => p.variant !== 'graphql-yoga').map((p) => ({ name: p.variant, dir: p.dir, modules: p.modules, bytes: p.bytes })),
  ];
  const compatibilityDate = await wranglerCompatibilityDate();
  const results = new Map<string, Phases>();
  for (const v of variants) {
    const config = await writeWorkerdConfig(join(workdir, `config-${basename(v.name).replaceAll(' ', '-')}`), v, compatibilityDate);
    const samples: Phases[] = [];
    for (let i = 0; i < runs; i++) {
      samples.push(await instructions(config, workdir, i));
      console.error(`  ${v.name}: run ${i + 1} of ${runs}, ${(samples[i].total / 1e6).toFixed(1)} M instructions`);
    }
    results.set(v.name, {
      total: median(samples.map((s) => s.total)),
      compile: median(samples.map((s) => s.compile)),
      evaluate: median(samples.map((s) => s.evaluate)),
    });
  }
  const floor = results.get('empty worker')!;
  const m = (n: number) => `${(n / 1e6).toFixed(1)} M`;
  console.log(`| workerd serve, Q1 once | minified | compile modules | evaluate | first request and the rest | total | over the empty worker |`);
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const v of variants) {
    const r = results.get(v.name)!;
    const rest = r.total - r.compile - r.evaluate;
    console.log(
      `| ${v.name} | ${(v.bytes / 1024).toFixed(1)} KB | ${m(r.compile)} | ${m(r.evaluate)} | ${m(rest)} | ${m(r.total)} | ${v.name === 'empty worker' ? 'floor' : `+${m(r.total - floor.total)}`} |`,
    );
  }
} finally {
  await rm(workdir, { recursive: true, force: true });
}
