// `node build.mjs edge`: one self-contained, minified ES bundle per edge target under dist/edge/.
import { mkdir, readFile, rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join, relative, sep } from 'node:path';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));

/**
 * Entry → output file, and the format the target platform loads. What few requests need (incremental
 * delivery, subscriptions over HTTP, the WebSocket server, compiled execution) is imported on first
 * use. A `split` target is an entry module plus chunks under chunks/<name>/ that it imports then: Deno
 * and Bun read a chunk only when it is imported. workerd compiles every module of a Worker when the
 * isolate starts, imported or not, so there the split saves evaluation but not parsing
 * (docs/graphql/cold-start.md). Vercel deploys a function as one file.
 */
export const targets = [
  { entry: 'src/index.ts', out: 'graphql.js', format: 'esm', split: true, what: 'neutral ES module: default { fetch }, createGraphQLHandler' },
  { entry: 'edge/deno.ts', out: 'deno.js', format: 'esm', split: true, what: 'Deno Deploy / `deno serve`' },
  { entry: 'edge/bun.ts', out: 'bun.js', format: 'esm', split: true, what: 'Bun: `bun bun.js` serves it (HTTP and WebSocket subscriptions)' },
  { entry: 'edge/workerd.ts', out: 'workerd.js', format: 'esm', split: true, codegen: false, what: 'Cloudflare Workers module worker' },
  { entry: 'edge/vercel.ts', out: 'vercel.js', format: 'esm', split: false, codegen: false, what: 'Vercel edge function (deploy as api/graphql.js)' },
  // edge-runtime evaluates scripts, not modules: an IIFE that registers a `fetch` event listener.
  { entry: 'edge/vercel-script.ts', out: 'vercel-edge-runtime.js', format: 'iife', split: false, codegen: false, what: 'Vercel edge-runtime script' },
];

/**
 * graphql-js builds its rule lists with `Object.freeze([...])`, a call esbuild must assume has side
 * effects, so the SDL rules (for schema documents, which the endpoint never validates) stayed in
 * every bundle. Marked pure, an unused list and the rules only it names are left out.
 */
const pureRuleLists = {
  name: 'graphql-pure-rule-lists',
  setup(build) {
    build.onLoad({ filter: /[\\/]graphql[\\/]validation[\\/]specifiedRules\.mjs$/ }, async (args) => ({
      contents: (await readFile(args.path, 'utf8')).replaceAll('Object.freeze(', '/* @__PURE__ */ Object.freeze('),
      loader: 'js',
    }));
  },
};

/** Resolves the plan code generator to its stand-in that generates nothing (src/execution/codegen-unavailable.ts). */
const withoutCodegen = {
  name: 'without-codegen',
  setup(build) {
    build.onResolve({ filter: /^\.\/codegen\.ts$/ }, (args) =>
      args.importer.endsWith(join('src', 'execution', 'execute-plan.ts')) ? { path: join(root, 'src', 'execution', 'codegen-unavailable.ts') } : undefined,
    );
  },
};

/**
 * The esbuild settings every edge bundle shares (the benchmark's and the tests' worker bundles too):
 * entry, output and format are per bundle.
 */
export const edgeBuildOptions = {
  absWorkingDir: root,
  bundle: true,
  // No Node or Deno built-ins may sneak in: `neutral` fails the build on any.
  platform: 'neutral',
  // graphql 16 has no `exports` map; without these fields `neutral` finds no entry point.
  mainFields: ['module', 'main'],
  target: 'es2022',
  minify: true,
  legalComments: 'none',
  // graphql-js reads process.env.NODE_ENV: Deno would ask for env permission, workerd has no `process`.
  // It first tests `globalThis.process`, which in Deno loads the whole Node compatibility layer
  // (tens of milliseconds at start-up): that test is answered at build time too.
  define: { 'process.env.NODE_ENV': '"production"', 'globalThis.process': '{"env":{"NODE_ENV":"production"}}' },
  // Non-ASCII text (the dataset's names) as UTF-8 rather than \u escapes: fewer bytes to load and parse.
  charset: 'utf8',
  logLevel: 'warning',
  plugins: [pureRuleLists],
};

/**
 * Builds every edge bundle into `outdir` (default dist/edge) and returns each one's modules and sizes.
 * @param {{ outdir?: string, quiet?: boolean }} [options]
 */
export async function build(options = {}) {
  const outdir = options.outdir ?? join(root, 'dist', 'edge');
  await mkdir(outdir, { recursive: true });
  const sizes = await Promise.all(targets.map((target) => buildTarget(target, outdir)));
  if (!options.quiet) {
    for (const s of sizes) {
      const modules = s.modules.length > 1 ? ` in ${s.modules.length} modules, ${kb(s.startBytes)} loaded at start` : '';
      console.log(`${relative(process.cwd(), s.file).padEnd(36)} ${kb(s.bytes).padStart(9)} minified ${kb(s.gzipBytes).padStart(9)} gzip${modules}`);
    }
  }
  return sizes;
}

/** One target: its modules (the entry first, paths relative to `outdir`) and their sizes. */
export async function buildTarget(target, outdir) {
  const name = target.out.replace(/\.js$/, '');
  // Chunk names carry content hashes: those of an earlier build would otherwise stay beside the new
  // ones, and wrangler uploads every file its rule matches (workerd compiles each one at start).
  await rm(join(outdir, 'chunks', name), { recursive: true, force: true });
  const result = await esbuild.build({
    ...edgeBuildOptions,
    entryPoints: { [name]: join(root, target.entry) },
    outdir,
    format: target.format,
    splitting: target.split,
    chunkNames: `chunks/${name}/[name]-[hash]`,
    // workerd and Vercel's edge refuse `new Function`: the compiled-plan code generator is left out.
    plugins: target.codegen === false ? [...edgeBuildOptions.plugins, withoutCodegen] : edgeBuildOptions.plugins,
    metafile: true,
  });
  const outputs = result.metafile.outputs;
  const key = (file) => relative(root, join(outdir, file)).split(sep).join('/');
  const modules = [
    target.out,
    ...Object.keys(outputs)
      .map((o) => relative(outdir, join(root, o)).split(sep).join('/'))
      .filter((m) => m !== target.out)
      .sort(),
  ];
  // What the entry loads before it runs: itself and the chunks it imports statically, transitively.
  const atStart = new Set();
  const visit = (file) => {
    if (atStart.has(file)) return;
    atStart.add(file);
    for (const imported of outputs[key(file)]?.imports ?? []) {
      if (imported.kind === 'import-statement') visit(relative(outdir, join(root, imported.path)).split(sep).join('/'));
    }
  };
  visit(target.out);
  let bytes = 0;
  let gzipBytes = 0;
  let startBytes = 0;
  for (const module of modules) {
    const code = await readFile(join(outdir, module));
    bytes += code.byteLength;
    gzipBytes += gzipSync(code).byteLength;
    if (atStart.has(module)) startBytes += code.byteLength;
  }
  const startModules = modules.filter((m) => atStart.has(m));
  const startInputs = [...new Set(startModules.flatMap((m) => Object.keys(outputs[key(m)]?.inputs ?? {})))].sort();
  return { file: join(outdir, target.out), name: target.out, modules, startModules, startInputs, bytes, gzipBytes, startBytes };
}

function kb(bytes) {
  return `${(bytes / 1024).toFixed(1)} KB`;
}
