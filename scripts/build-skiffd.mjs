// `node build.mjs skiffd`: dist/skiffd.cjs, the whole daemon and its dependencies in one CommonJS
// file for `node` (no node_modules needed), and dist/skiffd, a Node single executable application
// (that bundle injected into a copy of the running node binary with postject).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
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
 * The attach add-on (SOCK_SEQPACKET, native; node/skiffd/streaming/backends/seqpacket.ts finds it
 * beside the bundle or as a SEA asset). The build makes a daemon for the machine it runs on, so it
 * takes that machine's add-on. npm has prebuilt ones for linux-x64-gnu only; elsewhere the add-on is
 * built from node-unix-socket's source and named by SKIFFD_SEQPACKET_ADDON. Without one the daemon is
 * still built, with attach disabled, and the build says so.
 */
const ADDON_VERSION = '0.2.7';

/**
 * Node flags the daemon runs with (built into the single executable; pass them to node when running
 * skiffd.cjs). V8 lets the young generation grow to 2 x 16 MB semi-spaces under a steady stream of
 * calls, which a node agent pays in resident memory; the daemon's short-lived garbage (one call's
 * messages) fits in 2 MB semi-spaces.
 */
export const SKIFFD_NODE_FLAGS = ['--max-semi-space-size=2'];
const SUPPORTED_ARCHES = ['x64', 'arm64'];
/** Platforms whose add-on package.json installs (node-unix-socket-<platform>, an optional dependency). */
const PUBLISHED_PLATFORMS = ['linux-x64-gnu'];

/** The add-on file name seqpacket.ts looks for on a host of this architecture. */
export function addonFileName(arch = process.arch) {
  return `node-unix-socket.linux-${arch}-gnu.node`;
}

/**
 * Where this build takes the attach add-on from: SKIFFD_SEQPACKET_ADDON, else the npm package of the
 * host's platform. Without either it returns a warning, not an error: the daemon works without attach.
 * Only a host skiffd cannot run on at all stops the build.
 * @param {{ platform?: string, arch?: string, env?: Record<string, string | undefined>, resolve?: (id: string) => string, exists?: (path: string) => boolean }} [host]
 * @returns {{ path: string, warning?: undefined } | { path?: undefined, warning: string }}
 */
export function findAddon(host = {}) {
  const platform = host.platform ?? process.platform;
  const arch = host.arch ?? process.arch;
  const env = host.env ?? process.env;
  const resolve = host.resolve ?? createRequire(join(root, 'package.json')).resolve;
  const exists = host.exists ?? existsSync;
  if (platform !== 'linux' || !SUPPORTED_ARCHES.includes(arch)) {
    throw new Error(`skiffd builds for Linux on ${SUPPORTED_ARCHES.join(' or ')}; this is ${platform}-${arch}`);
  }
  const file = addonFileName(arch);
  const explicit = env.SKIFFD_SEQPACKET_ADDON;
  if (explicit) {
    if (!exists(explicit)) throw new Error(`SKIFFD_SEQPACKET_ADDON=${explicit}: no such file (it should be the ${file} add-on)`);
    return { path: explicit };
  }
  const platformName = `linux-${arch}-gnu`;
  const pkg = `node-unix-socket-${platformName}`;
  try {
    return { path: resolve(`${pkg}/${file}`) };
  } catch {
    /* not installed: say what to do below */
  }
  const get = PUBLISHED_PLATFORMS.includes(platformName)
    ? `run \`npm ci\` (it installs ${pkg}@${ADDON_VERSION}, an optional dependency) and rebuild; or build the add-on from node-unix-socket's source (a napi-rs project; docs/skiffd/install.md) and either`
    : `build the add-on from node-unix-socket's source (a napi-rs project; docs/skiffd/install.md, "Architectures") and either`;
  return {
    warning: [
      'skiffd is built WITHOUT attach.',
      `  The SOCK_SEQPACKET add-on ${file} was not found: SKIFFD_SEQPACKET_ADDON is unset and the npm package ${pkg} is not installed` +
        (PUBLISHED_PLATFORMS.includes(platformName)
          ? '.'
          : ` (npm ci installs only the linux-x64-gnu add-on; if your npm registry has ${pkg}@${ADDON_VERSION}, \`npm install --no-save\` it and rebuild).`),
      '  Everything else works; Attach answers FAILED_PRECONDITION.',
      `  To enable attach, ${get}`,
      `    - rebuild with SKIFFD_SEQPACKET_ADDON=/path/to/${file} (then shipped beside skiffd.cjs and inside skiffd), or`,
      `    - put it beside the installed skiffd as ${file}, or set SKIFFD_SEQPACKET_ADDON in skiffd's environment.`,
    ].join('\n'),
  };
}

/**
 * @param {{ outdir?: string, sea?: boolean, quiet?: boolean, addon?: boolean }} [options] `addon: false` leaves the
 *   attach add-on out on purpose (attach disabled, as on a host without one).
 * @returns {Promise<{ cjs: string, cjsBytes: number, sea?: string, seaBytes?: number, addon?: string, warnings: string[] }>}
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
  const found = options.addon === false ? { path: undefined, warning: undefined } : findAddon();
  const addon = found.path;
  const addonFile = addonFileName();
  // A stale add-on from an earlier build must not ship with a build that has none.
  await rm(join(outdir, addonFile), { force: true });
  if (addon) await copyFile(addon, join(outdir, addonFile));
  const result = { cjs, cjsBytes: (await stat(cjs)).size, addon, warnings: found.warning ? [found.warning] : [] };
  if (options.sea !== false) {
    result.sea = join(outdir, 'skiffd');
    await buildSea(cjs, result.sea, addon);
    result.seaBytes = (await stat(result.sea)).size;
  }
  if (!options.quiet) {
    const mb = (n) => `${(n / 1024 / 1024).toFixed(1)} MB`;
    console.log(`${relative(root, cjs)}  ${mb(result.cjsBytes)}`);
    if (result.sea) console.log(`${relative(root, result.sea)}  ${mb(result.seaBytes)} (single executable, node ${process.version})`);
    console.log(addon ? `attach add-on: ${addonFile} (beside skiffd.cjs${result.sea ? ' and inside skiffd' : ''})` : 'attach add-on: none (attach disabled)');
  }
  // Last, and whether or not the build is quiet: a daemon without attach must not go unnoticed.
  for (const warning of result.warnings) console.warn(`warning: ${warning}`);
  return result;
}

async function buildSea(mainScript, out, addon) {
  const work = await mkdtemp(join(tmpdir(), 'skiffd-sea-'));
  try {
    const blob = join(work, 'skiffd.blob');
    const seaConfig = join(work, 'sea-config.json');
    await writeFile(
      seaConfig,
      JSON.stringify({
        main: mainScript,
        output: blob,
        disableExperimentalSEAWarning: true,
        useCodeCache: true,
        execArgv: SKIFFD_NODE_FLAGS,
        assets: addon ? { [addonFileName()]: addon } : {},
      }),
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
