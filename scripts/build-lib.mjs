// `node build.mjs lib` (run by `npm pack`): src/ compiled by tsc to ES modules with .d.ts under dist/lib,
// the package's entry point for library use.
import { spawn } from 'node:child_process';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** @param {{ quiet?: boolean }} [options] */
export async function build(options = {}) {
  const outdir = join(root, 'dist', 'lib');
  await rm(outdir, { recursive: true, force: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const code = await new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [tsc, '-p', join(root, 'tsconfig.lib.json')], { cwd: root, stdio: 'inherit' });
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`tsc -p tsconfig.lib.json failed (exit ${code})`);
  // tsc rewrites `.ts` specifiers in the JavaScript it emits but not in declarations: a consumer's
  // compiler would look for .ts sources that are not in the package.
  let files = 0;
  for (const file of await readdir(outdir, { recursive: true })) {
    if (!file.endsWith('.d.ts')) continue;
    const path = join(outdir, file);
    const text = await readFile(path, 'utf8');
    await writeFile(path, text.replace(/(from\s+|import\()(['"])(\.{1,2}\/[^'"]*?)\.ts\2/g, '$1$2$3.js$2'));
    files++;
  }
  if (!options.quiet) console.log(`dist/lib: ${files} modules with declarations`);
  return { outdir };
}
