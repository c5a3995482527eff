// GraphiQL's page assets, read from the npm packages that ship them. The built server
// (scripts/build-server.mjs) replaces this module with one holding the same files inline, so
// dist/server.mjs serves GraphiQL with no node_modules.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface AssetFile {
  /** Name under the assets path, e.g. `graphiql.min.js`. */
  name: string;
  body: Uint8Array<ArrayBuffer>;
  contentType: string;
}

const js = 'text/javascript; charset=utf-8';

/** Where each asset comes from: [name, package, file in the package, content type]. */
export const assetSources: readonly [string, string, string, string][] = [
  ['react.production.min.js', 'react', 'umd/react.production.min.js', js],
  ['react-dom.production.min.js', 'react-dom', 'umd/react-dom.production.min.js', js],
  ['graphiql.min.js', 'graphiql', 'graphiql.min.js', js],
  ['graphiql.min.css', 'graphiql', 'graphiql.min.css', 'text/css; charset=utf-8'],
  ['graphql-ws.min.js', 'graphql-ws', 'umd/graphql-ws.min.js', js],
  ['graphql-sse.min.js', 'graphql-sse', 'umd/graphql-sse.min.js', js],
];

/** The start script, beside this module. */
export const startScript = new URL('./graphiql-start.js', import.meta.url);

/** Absolute path of every asset's source file, start.js included. */
export function assetPaths(): { name: string; path: string; contentType: string }[] {
  const require = createRequire(import.meta.url);
  const paths = [{ name: 'start.js', path: fileURLToPath(startScript), contentType: js }];
  for (const [name, pkg, file, contentType] of assetSources) {
    let path: string;
    try {
      path = join(dirname(require.resolve(`${pkg}/package.json`)), file);
    } catch (error) {
      throw new Error(`GraphiQL asset ${pkg}/${file} is missing (run npm ci): ${(error as Error).message}`);
    }
    paths.push({ name, path, contentType });
  }
  return paths;
}

export function loadAssetFiles(): AssetFile[] {
  return assetPaths().map(({ name, path, contentType }) => {
    let body: Buffer;
    try {
      body = readFileSync(path);
    } catch (error) {
      throw new Error(`GraphiQL asset ${name} could not be read (run npm ci): ${(error as Error).message}`);
    }
    return { name, body: new Uint8Array(body), contentType };
  });
}
