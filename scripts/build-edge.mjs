// `node build.mjs edge`: one self-contained, minified ES bundle per edge target under dist/edge/.
import { mkdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Entry → output file, and the format the target platform loads. */
export const targets = [
  { entry: 'src/index.ts', out: 'graphql.js', format: 'esm', what: 'neutral ES module: default { fetch }, createGraphQLHandler' },
  { entry: 'edge/deno.ts', out: 'deno.js', format: 'esm', what: 'Deno Deploy / `deno serve`' },
  { entry: 'edge/bun.ts', out: 'bun.js', format: 'esm', what: 'Bun: `bun bun.js` serves it (HTTP and WebSocket subscriptions)' },
  { entry: 'edge/workerd.ts', out: 'workerd.js', format: 'esm', what: 'Cloudflare Workers module worker' },
  { entry: 'edge/vercel.ts', out: 'vercel.js', format: 'esm', what: 'Vercel edge function (deploy as api/graphql.js)' },
  // edge-runtime evaluates scripts, not modules: an IIFE that registers a `fetch` event listener.
  { entry: 'edge/vercel-script.ts', out: 'vercel-edge-runtime.js', format: 'iife', what: 'Vercel edge-runtime script' },
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
 * Builds every edge bundle into `outdir` (default dist/edge) and returns each file's size.
 * @param {{ outdir?: string, quiet?: boolean }} [options]
 */
export async function build(options = {}) {
  const outdir = options.outdir ?? join(root, 'dist', 'edge');
  await mkdir(outdir, { recursive: true });
  await Promise.all(
    targets.map((target) =>
      esbuild.build({
        ...edgeBuildOptions,
        entryPoints: [join(root, target.entry)],
        outfile: join(outdir, target.out),
        format: target.format,
      }),
    ),
  );
  const sizes = [];
  for (const target of targets) {
    const file = join(outdir, target.out);
    const bytes = await readFile(file);
    sizes.push({ file, name: target.out, bytes: bytes.byteLength, gzipBytes: gzipSync(bytes).byteLength });
  }
  if (!options.quiet) {
    for (const s of sizes) {
      console.log(`${relative(process.cwd(), s.file).padEnd(36)} ${kb(s.bytes).padStart(9)} minified ${kb(s.gzipBytes).padStart(9)} gzip`);
    }
  }
  return sizes;
}

function kb(bytes) {
  return `${(bytes / 1024).toFixed(1)} KB`;
}
