// Which code a first request compiles, per source file. V8 compiles a function's bytecode the first
// time it runs (after pre-parsing it with its module), so a cold start pays for the code on its path
// twice: the whole bundle's pre-parse when the module loads, and a full parse of every function the
// module's evaluation and the first Q1 GET run. This runs each bundle once in Node with V8's function
// events, takes the functions compiled that way (nested ones counted once) and maps them to their
// source files through the bundle's source map. workerd, Deno and Node run the same V8 lazy
// compilation, so the bytes are the same there; what they cost in instructions is
// cold-start-instructions.ts's part.
//
//   npx tsx bench/graphql/cold-start-lazy-compile.ts
import { existsSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { originalPositionFor, TraceMap } from '@jridgewell/trace-mapping';
import * as esbuild from 'esbuild';
import { edgeBuildOptions } from '../../scripts/build-edge.mjs';
import { checkBody, peerBuildOptions } from './cold-start-bench.ts';
import { getPath, Q1 } from './queries.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const variants = [
  { name: 'skiff', entry: 'edge/workerd.ts', options: {} },
  { name: 'skiff, optional parts off', entry: 'bench/graphql/cold-start/skiff-bare-worker.ts', options: {} },
  { name: 'graphql-http', entry: 'bench/graphql/cold-start/graphql-http-worker.ts', options: peerBuildOptions },
];

// Imports the bundle and answers one Q1 GET, as a Worker's first request; prints the body.
const harness = `const { default: worker } = await import(process.argv[2]);
const response = await worker.fetch(new Request(${JSON.stringify(`http://localhost${getPath('/graphql', Q1)}`)}));
process.stdout.write(await response.text());
`;

/** Runs node with `argv`; what it printed. */
function node(argv: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(process.execPath, argv, { timeout: 60_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`node ${argv.join(' ')}: ${error.message}\n${stderr}`)) : resolve(stdout),
    ),
  );
}

/** Where a source file's bytes are counted: graphql-js by its folders, everything else by its path. */
function sourceGroup(path: string): string {
  const inPackage = /node_modules\/(.*)$/.exec(path)?.[1];
  // graphql 17's maps name its top-level sources (diagnostics.ts...) by paths that land nowhere.
  if (inPackage === undefined) return existsSync(path) ? relative(root, path) : 'graphql (top level)';
  // graphql 17's source maps name its TypeScript sources one level up (node_modules/src/language/...).
  const graphqlFolder = /^(?:graphql\/|src\/)([^/]+)\//.exec(inPackage)?.[1];
  return graphqlFolder ? `graphql/${graphqlFolder}` : inPackage;
}

/** Bytes of lazily compiled functions per source group, for the scripts under `dir`. */
async function compiledBytes(log: string, dir: string): Promise<Map<string, number>> {
  const lines = (await readFile(log, 'utf8')).split('\n');
  const scripts = new Map<string, string>();
  const ranges = new Map<string, [number, number][]>();
  for (const line of lines) {
    const fields = line.split(',');
    if (fields[0] === 'script-details') scripts.set(fields[1], fields[2]);
    else if (fields[0] === 'function' && fields[1] === 'parse-function') {
      const url = scripts.get(fields[2]) ?? '';
      if (!url.startsWith(pathToFileURL(dir).href)) continue;
      const file = fileURLToPath(url);
      if (!ranges.has(file)) ranges.set(file, []);
      const [start, end] = [Number(fields[3]), Number(fields[4])];
      // A line this version of V8 writes differently is left out rather than counted as NaN.
      if (Number.isInteger(start) && Number.isInteger(end) && end > start) ranges.get(file)!.push([start, end]);
    }
  }
  const bytes = new Map<string, number>();
  for (const [file, found] of ranges) {
    // V8's positions count UTF-16 code units, as JavaScript strings do.
    const code = await readFile(file, 'utf8');
    const map = new TraceMap(await readFile(`${file}.map`, 'utf8'));
    const lineStarts = [0];
    for (let i = code.indexOf('\n'); i !== -1; i = code.indexOf('\n', i + 1)) lineStarts.push(i + 1);
    const position = (offset: number) => {
      let low = 0;
      let high = lineStarts.length - 1;
      while (low < high) {
        const mid = (low + high + 1) >> 1;
        if (lineStarts[mid] <= offset) low = mid;
        else high = mid - 1;
      }
      return { line: low + 1, column: offset - lineStarts[low] };
    };
    // A function compiled inside one compiled before it is counted once.
    found.sort((a, b) => a[0] - b[0]);
    const outermost: [number, number][] = [];
    for (const [start, end] of found) {
      const last = outermost.at(-1);
      if (last !== undefined && start < last[1]) last[1] = Math.max(last[1], end);
      else outermost.push([start, end]);
    }
    for (const [start, end] of outermost) {
      // The event's start is the function's parameter list; its name, if any, maps just before it.
      const source = originalPositionFor(map, position(start)).source ?? originalPositionFor(map, position(start + 1)).source;
      const group = source === null ? '(not mapped)' : sourceGroup(resolve(dirname(file), source));
      bytes.set(group, (bytes.get(group) ?? 0) + end - start);
    }
  }
  return bytes;
}

export interface LazyCompileResult {
  variant: string;
  /** Bytes of functions compiled by the first request, per source file (graphql-js per folder). */
  bytes: Map<string, number>;
}

/** Builds each variant, answers one Q1 GET with it in a fresh Node and counts what V8 compiled lazily. */
export async function measureLazyCompile(log: (line: string) => void = console.error): Promise<LazyCompileResult[]> {
  const workdir = await mkdtemp(join(tmpdir(), 'skiff-bench-lazy-compile-'));
  try {
    const harnessFile = join(workdir, 'harness.mjs');
    await writeFile(harnessFile, harness);
    const results: LazyCompileResult[] = [];
    for (const [i, variant] of variants.entries()) {
      const dir = join(workdir, String(i));
      await esbuild.build({
        ...edgeBuildOptions,
        ...variant.options,
        entryPoints: { main: join(root, variant.entry) },
        outdir: dir,
        outExtension: { '.js': '.mjs' },
        format: 'esm',
        splitting: true,
        sourcemap: true,
        logLevel: 'silent',
      });
      const events = join(workdir, `${i}.log`);
      const body = await node([
        '--log-function-events',
        `--logfile=${events}`,
        '--no-logfile-per-isolate',
        harnessFile,
        pathToFileURL(join(dir, 'main.mjs')).href,
      ]);
      checkBody(variant.name, body);
      const bytes = await compiledBytes(events, dir);
      results.push({ variant: variant.name, bytes });
      log(`  ${variant.name}: ${sum(bytes)} bytes compiled`);
    }
    return results;
  } finally {
    await rm(workdir, { recursive: true, force: true });
  }
}

const sum = (bytes: Map<string, number>) => [...bytes.values()].reduce((a, b) => a + b, 0);

/** The results as one markdown table, the files with the most compiled code first. */
export function lazyCompileTable(results: LazyCompileResult[]): string {
  const of = (variant: string, group: string) => results.find((r) => r.variant === variant)?.bytes.get(group) ?? 0;
  const groups = [...new Set(results.flatMap((r) => [...r.bytes.keys()]))];
  groups.sort((a, b) => of('skiff', b) + of('graphql-http', b) - (of('skiff', a) + of('graphql-http', a)) || a.localeCompare(b));
  const kb = (n: number) => (n === 0 ? '–' : `${(n / 1024).toFixed(1)} KB`);
  return [
    `| compiled by a first Q1 GET | ${results.map((r) => r.variant).join(' | ')} |`,
    `|---|${results.map(() => '---:').join('|')}|`,
    ...groups.map((group) => `| ${group} | ${results.map((r) => kb(of(r.variant, group))).join(' | ')} |`),
    `| **total** | ${results.map((r) => `**${kb(sum(r.bytes))}**`).join(' | ')} |`,
  ].join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values: args } = parseArgs({ options: { help: { type: 'boolean', short: 'h' } } });
  if (args.help) {
    console.log(`usage: npx tsx bench/graphql/cold-start-lazy-compile.ts
  bytes of code a fresh isolate compiles to answer its first Q1 GET, per source file, for our workerd
  bundle, our handler with its optional parts off, and graphql-http's handler (V8 function events in Node)`);
    process.exit(0);
  }
  console.log(`\n${lazyCompileTable(await measureLazyCompile())}`);
}
