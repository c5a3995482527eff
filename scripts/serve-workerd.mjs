#!/usr/bin/env node
// `npm run serve:workerd [-- bundle.js]`: the built Cloudflare Worker (wrangler.toml's `main`, after
// `npm run build`) on a local workerd through Miniflare, with wrangler.toml's compatibility date. PORT (default 8787)
// and HOST (default 127.0.0.1) pick the address.
import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'smol-toml';
import { Miniflare } from 'miniflare';

const root = fileURLToPath(new URL('..', import.meta.url));
const wrangler = parse(await readFile(join(root, 'wrangler.toml'), 'utf8'));
const scriptPath = process.argv[2] ? resolve(process.argv[2]) : join(root, String(wrangler.main));
if (!existsSync(scriptPath)) {
  console.error(`${relative(process.cwd(), scriptPath)} is missing: run \`npm run build\` (or \`node build.mjs edge\`) first`);
  process.exit(1);
}
const rawPort = process.env.PORT || '8787';
const port = /^\d+$/.test(rawPort) ? Number(rawPort) : NaN;
if (!(port >= 0 && port <= 65535)) {
  console.error(`PORT must be an integer from 0 to 65535 (got "${rawPort}")`);
  process.exit(2);
}
const host = process.env.HOST || '127.0.0.1';

const mf = new Miniflare({
  modules: true,
  scriptPath,
  // workerd refuses module paths outside modulesRoot, which defaults to the working directory.
  modulesRoot: dirname(scriptPath),
  // The chunks it imports on demand are ES modules too, as wrangler.toml's rules upload them.
  modulesRules: [{ type: 'ESModule', include: ['**/*.js'] }],
  compatibilityDate: String(wrangler.compatibility_date),
  host,
  port,
});
const url = await mf.ready;
console.log(`workerd serving ${relative(process.cwd(), scriptPath)} at ${new URL('/graphql', url)}`);
const stop = () =>
  mf.dispose().then(
    () => process.exit(0),
    () => process.exit(1),
  );
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
