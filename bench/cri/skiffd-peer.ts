// skiffd under test: by default bundled fresh from the current sources (the release recipe in
// scripts/build-skiffd.mjs, without the single-executable step) into the run's temp dir and run with
// node, so the numbers are for what ships and not for tsx's on-the-fly compilation.
import { mkdirSync } from 'node:fs';
import { CgroupDriver } from '../../proto/gen/runtime/v1/api.ts';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { repoRoot, skiffdCommand, startSkiffd, type SkiffdHandle } from '../../test/support/skiffd.ts';
import { deleteRuncContainers, killAll, listProcesses, run, unmountAllUnder } from './host.ts';
import { createNetwork } from './network.ts';
import type { Peer } from './peer.ts';
import { removeAllPods } from './workload.ts';

export type SkiffdBuild = { kind: 'bundle' } | { kind: 'source' } | { kind: 'binary'; path: string };

async function commandFor(build: SkiffdBuild, dir: string): Promise<{ command: string[]; label: string }> {
  if (build.kind === 'source') return { command: skiffdCommand(), label: 'sources via tsx' };
  if (build.kind === 'binary') {
    const path = build.path;
    return { command: path.endsWith('.cjs') || path.endsWith('.js') ? [process.execPath, path] : [path], label: path };
  }
  // A variable specifier: the build recipe is plain JS without type declarations.
  const recipe = pathToFileURL(join(repoRoot, 'scripts', 'build-skiffd.mjs')).href;
  const { build: bundle, SKIFFD_NODE_FLAGS: flags } = (await import(recipe)) as {
    build(o: { outdir: string; sea: boolean; quiet: boolean }): Promise<{ cjs: string }>;
    SKIFFD_NODE_FLAGS: string[];
  };
  const { cjs } = await bundle({ outdir: join(dir, 'bin'), sea: false, quiet: true });
  // The flags the single executable carries, so the bundle runs as what ships.
  return {
    command: [process.execPath, ...flags, cjs],
    label: `bundle of the working tree at ${await sourceVersion()}, node ${process.version} ${flags.join(' ')}`,
  };
}

/** The commit the daemon's sources are at, and whether they have uncommitted changes (numbers move with the code). */
async function sourceVersion(): Promise<string> {
  const head = (await run('git', ['-C', repoRoot, 'rev-parse', '--short', 'HEAD'], 5_000).catch(() => '')).trim();
  if (!head) return 'an unknown commit';
  const dirty = (await run('git', ['-C', repoRoot, 'status', '--porcelain', '--', 'node/skiffd', 'proto'], 5_000).catch(() => '')).trim();
  return dirty ? `${head} + uncommitted changes` : head;
}

/** `mirrors` maps registry hosts to mirror URLs (critest's images come from the conformance kit's registry). */
export async function startSkiffdPeer(
  dir: string,
  registryHost: string,
  build: SkiffdBuild,
  options: {
    logLevel?: string;
    mirrors?: Record<string, string>;
    nodeFlags?: string[];
    /** The peer's name in the results (default skiffd). */
    name?: 'skiffd' | 'skiffd-cgroupfs';
    /** [runtime] cgroup_driver (default: skiffd's own, auto). */
    cgroupDriver?: 'systemd' | 'cgroupfs';
    /** More TOML, after the bench's own (e.g. an [nri] table). */
    extraConfig?: string;
  } = {},
): Promise<Peer> {
  const logLevel = options.logLevel ?? 'info';
  const mirrors = Object.entries(options.mirrors ?? {});
  mkdirSync(dir, { recursive: true });
  const net = createNetwork(join(dir, 'cni'), 'skb', 'skiffd');
  const built = await commandFor(build, dir);
  const { label } = built;
  // Node's own flags (e.g. --cpu-prof) go right after node, when skiffd runs on node.
  const command =
    options.nodeFlags?.length && built.command[0] === process.execPath ? [built.command[0], ...options.nodeFlags, ...built.command.slice(1)] : built.command;
  const config = [
    `log_level = ${JSON.stringify(logLevel)}`,
    ...(options.cgroupDriver ? ['[runtime]', `cgroup_driver = ${JSON.stringify(options.cgroupDriver)}`] : []),
    '[cni]',
    `conf_dir = ${JSON.stringify(net.confDir)}`,
    'bin_dir = "/usr/lib/cni"',
    `[registry.configs."${registryHost}"]`,
    'insecure = true',
    ...mirrors.flatMap(([host, url]) => [`[registry.mirrors.${JSON.stringify(host)}]`, `endpoints = [${JSON.stringify(url)}]`]),
    ...[...new Set(mirrors.map(([, url]) => new URL(url).host))]
      .filter((host) => host !== registryHost)
      .flatMap((host) => [`[registry.configs.${JSON.stringify(host)}]`, 'insecure = true']),
    options.extraConfig ?? '',
    '',
  ].join('\n');
  let d: SkiffdHandle;
  try {
    d = await startSkiffd({ config, command, dir, startTimeoutMs: 60_000 });
  } catch (err) {
    await net.cleanup();
    throw err;
  }
  const runcRoot = join(d.state, 'runc');
  const version = await d.runtime.version({}, { signal: AbortSignal.timeout(10_000) });
  const runtimeConfig = await d.runtime.runtimeConfig({}, { signal: AbortSignal.timeout(10_000) });
  const cgroupDriver = runtimeConfig.linux?.cgroupDriver === CgroupDriver.SYSTEMD ? 'systemd' : 'cgroupfs';

  const helperPids = () =>
    listProcesses()
      .filter((p) => p.pid !== d.child.pid && p.argv.some((a) => a.includes(dir)) && /(^|\/)(conmon|catatonit)$/.test(p.argv[0] ?? ''))
      .map((p) => p.pid);

  let tornDown = false;
  const teardown = async () => {
    if (tornDown) return;
    tornDown = true;
    if (d.child.exitCode === null && d.child.signalCode === null) await removeAllPods(d.runtime).catch(() => {});
    d.channel.close();
    await d.stop('SIGTERM', 20_000).catch(() => {});
    // Whatever a failed run left: containers in our runc root, monitors, mounts, the bridge.
    await deleteRuncContainers(runcRoot);
    killAll(helperPids());
    await unmountAllUnder(dir);
    await net.cleanup();
  };

  return {
    name: options.name ?? 'skiffd',
    description: `skiffd ${version.runtimeVersion} (${label}), ${cgroupDriver} cgroup driver`,
    cgroupDriver,
    runtime: d.runtime,
    images: d.images,
    daemonPid: d.child.pid!,
    socket: d.socket,
    helperPids,
    logs: d.logs,
    teardown,
  };
}
