// `node build.mjs skiffd`: dist/skiffd.cjs, the whole daemon and its dependencies in one CommonJS
// file for `node` (no node_modules needed), and dist/skiffd, a Node single executable application
// (that bundle injected into a copy of the running node binary with postject).
import { execFileSync } from 'node:child_process';
import { chmod, copyFile, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { createRequire } from 'node:module';

const root = fileURLToPath(new URL('..', import.meta.url));
/** The fuse string Node's SEA loader looks for; fixed by Node. */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
/**
 * The attach add-on (SOCK_SEQPACKET, native) of the host's architecture: node/skiffd/streaming/backends/
 * seqpacket.ts finds it beside the bundle or as a SEA asset. The build makes a daemon for the machine it
 * runs on, so it takes that machine's add-on, or stops and says how to get it.
 */
const ADDON_PLATFORM = `linux-${process.arch}-gnu`;
const ADDON_NAME = `node-unix-socket.${ADDON_PLATFORM}.node`;
const SUPPORTED_ARCHES = ['x64', 'arm64'];

function addonPath() {
  if (process.platform !== 'linux' || !SUPPORTED_ARCHES.includes(process.arch)) {
    throw new Error(`skiffd builds for Linux on ${SUPPORTED_ARCHES.join(' or ')}; this is ${process.platform}-${process.arch}`);
  }
  const pkg = `node-unix-socket-${ADDON_PLATFORM}`;
  try {
    return createRequire(join(root, 'package.json')).resolve(`${pkg}/${ADDON_NAME}`);
  } catch {
    throw new Error(`the attach add-on for ${ADDON_PLATFORM} is not installed: run \`npm install --no-save ${pkg}@0.2.7\` (or npm ci on this machine)`);
  }
}

/**
 * @param {{ outdir?: string, sea?: boolean, quiet?: boolean }} [options]
 * @returns {Promise<{ cjs: string, cjsBytes: number, sea?: string, seaBytes?: number }>}
 */
export async function build(options = {}) {
  const outdir = options.outdir ?? join(root, 'dist');
  await mkdir(outdir, { recursive: true });
  const cjs = join(outdir, 'skiffd.cjs');
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: [join(root, 'node', 'skiffd', 'main.ts')],
    outfile: cjs,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node22',
    // Whitespace and syntax only: identifiers stay, so stack traces in the logs still name functions.
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'eof',
    banner: { js: '#!/usr/bin/env node' },
    logLevel: 'warning',
  });
  await chmod(cjs, 0o755);
  const addon = addonPath();
  await copyFile(addon, join(outdir, ADDON_NAME));
  const result = { cjs, cjsBytes: (await stat(cjs)).size };
  if (options.sea !== false) {
    result.sea = join(outdir, 'skiffd');
    await buildSea(cjs, result.sea, addon);
    result.seaBytes = (await stat(result.sea)).size;
  }
  if (!options.quiet) {
    const mb = (n) => `${(n / 1024 / 1024).toFixed(1)} MB`;
    console.log(`${relative(root, cjs)}  ${mb(result.cjsBytes)}`);
    if (result.sea) console.log(`${relative(root, result.sea)}  ${mb(result.seaBytes)} (single executable, node ${process.version})`);
  }
  return result;
}

async function buildSea(mainScript, out, addon) {
  const work = await mkdtemp(join(tmpdir(), 'skiffd-sea-'));
  try {
    const blob = join(work, 'skiffd.blob');
    const seaConfig = join(work, 'sea-config.json');
    await writeFile(
      seaConfig,
      JSON.stringify({ main: mainScript, output: blob, disableExperimentalSEAWarning: true, useCodeCache: true, assets: { [ADDON_NAME]: addon } }),
    );
    quietly(process.execPath, ['--experimental-sea-config', seaConfig]);
    await rm(out, { force: true });
    await copyFile(process.execPath, out);
    // postject's CLI in a child: its ELF parser prints harmless section warnings we only want on failure.
    const postject = join(root, 'node_modules', 'postject', 'dist', 'cli.js');
    quietly(process.execPath, [postject, out, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE]);
    await chmod(out, 0o755);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** Runs a build step, showing its output only if it fails. */
function quietly(cmd, args) {
  try {
    execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  } catch (err) {
    throw new Error(`${[cmd, ...args].join(' ')} failed:\n${err.stdout ?? ''}${err.stderr ?? ''}`);
  }
}
