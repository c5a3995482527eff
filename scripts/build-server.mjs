// `node build.mjs server`: dist/server.mjs, the Node server as one ES module with every dependency
// and GraphiQL's assets inside, so `node dist/server.mjs` needs no node_modules.
import { mkdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join, relative } from 'node:path';
import * as esbuild from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));

/**
 * Node flags the server runs with: `npm start` and the image pass them, and `node dist/server.mjs`
 * should too. Under a stream of requests or events V8 lets the young generation grow to 2 × 32 MB
 * semi-spaces, which a server holding thousands of idle WebSockets pays in resident memory for
 * nothing; a request's or an event's short-lived garbage fits in 4 MB semi-spaces.
 */
export const SERVER_NODE_FLAGS = ['--max-semi-space-size=4'];

/** graphiql-assets.ts reads the files from node_modules at run time; the bundle carries them instead. */
const inlineGraphiQLAssets = {
  name: 'inline-graphiql-assets',
  setup(build) {
    build.onLoad({ filter: /[\\/]node[\\/]graphql[\\/]graphiql-assets\.ts$/ }, async () => {
      const { tsImport } = await import('tsx/esm/api');
      const { assetPaths } = await tsImport(join(root, 'node/graphql/graphiql-assets.ts'), import.meta.url);
      const files = await Promise.all(
        assetPaths().map(async ({ name, path, contentType }) => ({ name, contentType, base64: (await readFile(path)).toString('base64') })),
      );
      return {
        loader: 'js',
        contents: `const files = ${JSON.stringify(files)};
export function loadAssetFiles() {
  return files.map(({ name, contentType, base64 }) => {
    const bytes = Buffer.from(base64, 'base64');
    return { name, contentType, body: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) };
  });
}
`,
      };
    });
  },
};

/**
 * @param {{ outfile?: string, quiet?: boolean }} [options]
 * @returns {Promise<{ file: string, bytes: number }>}
 */
export async function build(options = {}) {
  const outfile = options.outfile ?? join(root, 'dist', 'server.mjs');
  await mkdir(join(outfile, '..'), { recursive: true });
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: [join(root, 'node/graphql/serve.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    minify: true,
    keepNames: true,
    legalComments: 'none',
    charset: 'utf8',
    sourcemap: false,
    // The CommonJS dependencies (ws, prom-client) call require() for Node's built-ins.
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
    // Optional native speed-ups ws tries to load and works without.
    external: ['bufferutil', 'utf-8-validate'],
    logLevel: 'warning',
    plugins: [inlineGraphiQLAssets],
  });
  const bytes = (await readFile(outfile)).byteLength;
  if (!options.quiet) console.log(`${relative(process.cwd(), outfile).padEnd(36)} ${(bytes / 1024).toFixed(1).padStart(7)} KB`);
  return { file: outfile, bytes };
}
