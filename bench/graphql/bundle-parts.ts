// What the edge bundle's bytes are made of: the workerd bundle as shipped, then rebuilt with the
// same esbuild settings but with one part taken out at a time, so each difference is that part's
// share of the gzip size (gzip shares context across parts, so the shares add up only roughly).
//
//   npx tsx bench/graphql/bundle-parts.ts
//
// The variants without graphql-js or without the dataset do not run; they only measure size.
import { readFile } from 'node:fs/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';
import { edgeBuildOptions } from '../../scripts/build-edge.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));
const entry = join(root, 'edge', 'workerd.ts');
const limitKb = 80;

/** Source of a module exporting the same names as `exports`, each an empty function or an empty table. */
function emptied(exports: Record<string, unknown>): string {
  const value = (v: unknown) => (typeof v === 'string' ? '""' : Array.isArray(v) ? '[]' : 'function(){}');
  return Object.entries(exports)
    .map(([n, v]) => `export const ${n} = ${value(v)};`)
    .join('\n');
}

/** Replaces a module by an emptied one. */
function emptyModule(name: string, filter: RegExp, exportsOf: () => Promise<Record<string, unknown>>): esbuild.Plugin {
  return {
    name,
    setup(build) {
      build.onResolve({ filter }, (args) => ({ path: args.path, namespace: name }));
      build.onLoad({ filter: /.*/, namespace: name }, async () => ({ contents: emptied(await exportsOf()), loader: 'js' }));
    },
  };
}

const withoutGraphqlJs = emptyModule('no-graphql-js', /^graphql$/, () => import('graphql') as Promise<Record<string, unknown>>);
const withoutDataset = emptyModule(
  'no-dataset',
  /data\.generated\.ts$/,
  () => import('../../src/countries/data.generated.ts') as Promise<Record<string, unknown>>,
);

/** graphql-js's modules other than its type system and introspection, each emptied the same way. */
const graphqlJsBeyondTypes = [
  'language/parser.mjs',
  'language/lexer.mjs',
  'validation/validate.mjs',
  'validation/specifiedRules.mjs',
  'execution/execute.mjs',
  'execution/subscribe.mjs',
  'type/validate.mjs',
  'utilities/printSchema.mjs',
];
const onlyGraphqlJsTypes: esbuild.Plugin = {
  name: 'only-graphql-js-types',
  setup(build) {
    build.onLoad({ filter: /[\\/]graphql[\\/].*\.mjs$/ }, async (args) => {
      if (!graphqlJsBeyondTypes.some((m) => args.path.replaceAll('\\', '/').endsWith(`/graphql/${m}`))) return undefined;
      return { contents: emptied(await import(args.path)), loader: 'js' };
    });
  },
};

async function gzipKb(plugins: esbuild.Plugin[], outdir: string, name: string): Promise<{ min: number; gzip: number }> {
  const outfile = join(outdir, `${name}.js`);
  await esbuild.build({ ...edgeBuildOptions, plugins: [...plugins, ...(edgeBuildOptions.plugins ?? [])], entryPoints: [entry], outfile, format: 'esm' });
  const bytes = await readFile(outfile);
  return { min: bytes.byteLength / 1024, gzip: gzipSync(bytes).byteLength / 1024 };
}

const outdir = await mkdtemp(join(tmpdir(), 'skiff-bundle-parts-'));
try {
  const shipped = await gzipKb([], outdir, 'shipped');
  const noGraphql = await gzipKb([withoutGraphqlJs], outdir, 'no-graphql');
  const noData = await gzipKb([withoutDataset], outdir, 'no-data');
  const typesOnly = await gzipKb([onlyGraphqlJsTypes], outdir, 'types-only');
  const neither = await gzipKb([withoutGraphqlJs, withoutDataset], outdir, 'neither');
  const row = (what: string, kb: { min: number; gzip: number }) =>
    `| ${what.padEnd(58)} | ${kb.min.toFixed(1).padStart(6)} KB | ${kb.gzip.toFixed(1).padStart(6)} KB |`;
  console.log(`| ${'dist/edge/workerd.js'.padEnd(58)} | minified  |      gzip |`);
  console.log(`| ${'-'.repeat(58)} | --------: | --------: |`);
  console.log(row('as shipped', shipped));
  console.log(row('without graphql-js (our code, graphql-ws, dataset)', noGraphql));
  console.log(row('without the dataset (all code)', noData));
  console.log(row("graphql-js's type system and introspection only", typesOnly));
  console.log(row('without either (our code and graphql-ws)', neither));
  console.log();
  console.log(`graphql-js's share: ${(shipped.gzip - noGraphql.gzip).toFixed(1)} KB gzip; the dataset's: ${(shipped.gzip - noData.gzip).toFixed(1)} KB gzip.`);
  console.log(`Left for a GraphQL engine under ${limitKb} KB gzip with everything else as it is: ${(limitKb - noGraphql.gzip).toFixed(1)} KB gzip.`);
} finally {
  await rm(outdir, { recursive: true, force: true });
}
