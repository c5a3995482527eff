// containerd as the reference peer, in either release users run: 2.1 (the current one, brought by the
// conformance kit's containerd2.sh from Debian unstable) or Debian 12's 1.6.20. Its own root, state,
// sockets, runc root and CNI network under the run's temp dir, configured like a kubelet node would be
// (CRI plugin, runc v2 shim, overlayfs) plus what this VM needs (restrict_oom_score_adj: no
// CAP_SYS_RESOURCE here).
import { execFileSync, spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createChannel, createClient } from 'nice-grpc';
import { ImageServiceDefinition, RuntimeServiceDefinition } from '../../proto/gen/runtime/v1/api.ts';
import { systemdBooted } from '../../node/skiffd/cgroups/driver.ts';
import { kitDir } from '../../test/support/cri-conformance.ts';
import { deleteRuncContainers, killAll, listProcesses, onPath, unmountAllUnder } from './host.ts';
import { PAUSE_ARGV } from './images.ts';
import { createNetwork } from './network.ts';
import type { Peer } from './peer.ts';
import { removeAllPods } from './workload.ts';

export const CONTAINERD_INSTALL_HINT = 'apt-get install containerd   # Debian 12: containerd 1.6.20';
export const CONTAINERD2_HINT = `${join(kitDir, 'containerd2.sh')} (the conformance kit) brings containerd 2.1 from Debian unstable`;

/** The releases a run can set skiffd beside. */
export type ContainerdRelease = '1.6' | '2.1';

/** Debian 12's containerd (1.6) on PATH, or the kit's containerd 2.1 (fetched into its cache on first use). */
export function containerdBinary(release: ContainerdRelease = '1.6'): string | undefined {
  if (release === '1.6') return onPath('containerd');
  // A node without network is handed the directory containerd2.sh filled on its host.
  const given = process.env.SKIFF_CONTAINERD2_DIR;
  if (given) return existsSync(join(given, 'containerd')) ? join(given, 'containerd') : undefined;
  const script = join(kitDir, 'containerd2.sh');
  if (!existsSync(script)) return undefined;
  try {
    const dir = execFileSync('bash', [script], { encoding: 'utf8', timeout: 600_000, stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return existsSync(join(dir, 'containerd')) ? join(dir, 'containerd') : undefined;
  } catch {
    return undefined;
  }
}

const q = (s: string) => JSON.stringify(s);

function configToml(o: {
  root: string;
  state: string;
  socket: string;
  runcRoot: string;
  cniConfDir: string;
  sandboxImage: string;
  registryHost: string;
  mirrors: Record<string, string>;
  systemdCgroup: boolean;
}): string {
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  return `version = 2
root = ${q(o.root)}
state = ${q(o.state)}
# Snapshotters this host cannot use only add startup noise.
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = ${q(o.socket)}
[ttrpc]
  address = ${q(`${o.socket}.ttrpc`)}
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = ${q(join(o.root, 'opt'))}

[${cri}]
  sandbox_image = ${q(o.sandboxImage)}
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  [${cri}.cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = ${q(o.cniConfDir)}
    max_conf_num = 1
  [${cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [${cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [${cri}.containerd.runtimes.runc.options]
        Root = ${q(o.runcRoot)}
        SystemdCgroup = ${o.systemdCgroup}
  [${cri}.registry.mirrors.${q(o.registryHost)}]
    endpoint = [${q(`http://${o.registryHost}`)}]
${Object.entries(o.mirrors)
  .map(([host, url]) => `  [${cri}.registry.mirrors.${q(host)}]\n    endpoint = [${q(url)}]\n`)
  .join('')}`;
}

/** containerd 2's configuration (version 3): the CRI plugin split into images and runtime, registries from a certs.d folder. */
function configTomlV3(o: Parameters<typeof configToml>[0] & { certsDir: string; nri?: ContainerdNri }): string {
  const nri = o.nri
    ? `
[plugins."io.containerd.nri.v1.nri"]
  disable = false
  socket_path = ${q(o.nri.socketPath)}
  plugin_path = ${q(o.nri.pluginPath)}
  plugin_config_path = ${q(o.nri.pluginConfigPath)}
  disable_connections = ${o.nri.disableConnections ?? false}
`
    : '';
  return `version = 3
root = ${q(o.root)}
state = ${q(o.state)}
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.erofs"${o.nri ? '' : ', "io.containerd.nri.v1.nri"'}]
${nri}
[grpc]
  address = ${q(o.socket)}
[ttrpc]
  address = ${q(`${o.socket}.ttrpc`)}
[debug]
  address = ""
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = ${q(join(o.root, 'opt'))}

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = ${q(o.sandboxImage)}
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = ${q(o.certsDir)}

[plugins."io.containerd.cri.v1.runtime"]
  enable_selinux = false
  tolerate_missing_hugetlb_controller = true
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = ${q(o.cniConfDir)}
    max_conf_num = 1
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "runc"
        Root = ${q(o.runcRoot)}
        SystemdCgroup = ${o.systemdCgroup}

[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`;
}

/** containerd 2.1's NRI plugin, on (the kit's config has it off): its socket and plugin directories. */
export interface ContainerdNri {
  socketPath: string;
  pluginPath: string;
  pluginConfigPath: string;
  disableConnections?: boolean;
}

/** One hosts.toml per registry name under `certsDir`, each served by `url` (plain HTTP). */
function writeCertsDir(certsDir: string, hosts: Record<string, string>): void {
  for (const [host, url] of Object.entries(hosts)) {
    mkdirSync(join(certsDir, host), { recursive: true });
    writeFileSync(join(certsDir, host, 'hosts.toml'), `server = ${q(url)}\n\n[host.${q(url)}]\n  capabilities = ["pull", "resolve"]\n`);
  }
}

async function waitForServing(runtime: Peer['runtime'], exited: () => boolean, logFile: string, timeoutMs: number): Promise<string> {
  const until = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < until) {
    if (exited()) throw new Error(`containerd exited at startup; its log:\n${readFileSync(logFile, 'utf8').slice(-3000)}`);
    try {
      const v = await runtime.version({}, { signal: AbortSignal.timeout(1000) });
      const status = await runtime.status({}, { signal: AbortSignal.timeout(2000) });
      const notReady = status.status?.conditions.filter((c) => !c.status).map((c) => `${c.type}: ${c.message || c.reason}`) ?? [];
      if (notReady.length === 0) return v.runtimeVersion;
      last = notReady.join('; ');
    } catch (err) {
      last = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`containerd did not become ready within ${timeoutMs} ms (${last}); its log:\n${readFileSync(logFile, 'utf8').slice(-3000)}`);
}

export async function startContainerdPeer(
  dir: string,
  registryHost: string,
  sandboxImage: string,
  mirrors: Record<string, string> = {},
  release: ContainerdRelease = '1.6',
  /** containerd 2.1 only: read registry hosts from this certs.d directory as given, instead of writing one. */
  options: { certsDir?: string; nri?: ContainerdNri; readyTimeoutMs?: number } = {},
): Promise<Peer> {
  const bin = containerdBinary(release);
  if (!bin) throw new Error(`containerd ${release} is not available (${release === '1.6' ? CONTAINERD_INSTALL_HINT : CONTAINERD2_HINT})`);
  const root = join(dir, 'root');
  const state = join(dir, 'state');
  const socket = join(dir, 'containerd.sock');
  const runcRoot = join(state, 'runc');
  for (const d of [root, state]) mkdirSync(d, { recursive: true });
  const name = release === '2.1' ? 'containerd2' : 'containerd';
  const net = createNetwork(join(dir, 'cni'), release === '2.1' ? 'ct2' : 'ctb', name);
  const configFile = join(dir, 'config.toml');
  // Matched to the host, as a node is set up: the systemd driver where systemd is PID 1.
  const systemdCgroup = systemdBooted();
  const settings = { root, state, socket, runcRoot, cniConfDir: net.confDir, sandboxImage, registryHost, mirrors, systemdCgroup };
  if (release === '1.6') writeFileSync(configFile, configToml(settings));
  else {
    const certsDir = options.certsDir ?? join(dir, 'certs.d');
    if (!options.certsDir) writeCertsDir(certsDir, { [registryHost]: `http://${registryHost}`, ...mirrors });
    writeFileSync(configFile, configTomlV3({ ...settings, certsDir, nri: options.nri }));
  }

  // containerd 1.6 puts shim sockets under /run/containerd/s whatever its state dir is; remove the
  // (empty) directories afterwards if this run created them.
  const createdRunDirs = ['/run/containerd', '/run/containerd/s'].filter((d) => !existsSync(d)).reverse();

  const logFile = join(dir, 'containerd.log');
  const log = createWriteStream(logFile);
  // Its own shim first on PATH (containerd runs containerd-shim-runc-v2 from there).
  const env = { ...process.env, PATH: `${dirname(bin)}:${process.env.PATH ?? ''}` };
  const child = spawn(bin, ['--config', configFile], { stdio: ['ignore', 'pipe', 'pipe'], env });
  child.stdout!.pipe(log, { end: false });
  child.stderr!.pipe(log, { end: false });
  const exitedPromise = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const hasExited = () => child.exitCode !== null || child.signalCode !== null;
  process.once('exit', () => child.kill('SIGKILL'));

  const channel = createChannel(`unix://${socket}`);
  const runtime = createClient(RuntimeServiceDefinition, channel);
  const images = createClient(ImageServiceDefinition, channel);

  const helperPids = () => {
    const procs = listProcesses();
    const shims = procs.filter((p) => /containerd-shim-runc-v2$/.test(p.argv[0] ?? '') && p.argv.includes(socket)).map((p) => p.pid);
    // The sandbox holder of each pod (our pause image, or the kit's /pause) is a child of its shim.
    const pauses = procs
      .filter((p) => shims.includes(p.ppid) && (p.argv.join(' ') === PAUSE_ARGV.join(' ') || /(^|\/)pause$/.test(p.argv[0] ?? '')))
      .map((p) => p.pid);
    return [...shims, ...pauses];
  };

  let tornDown = false;
  const teardown = async () => {
    if (tornDown) return;
    tornDown = true;
    if (!hasExited()) await removeAllPods(runtime).catch(() => {});
    channel.close();
    if (!hasExited()) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exitedPromise;
      clearTimeout(timer);
    }
    // A failed run may leave containers and their shims behind: delete them through our runc root.
    if (existsSync(runcRoot)) {
      for (const ns of ['k8s.io']) {
        const nsRoot = join(runcRoot, ns);
        await deleteRuncContainers(nsRoot);
      }
    }
    // Shims exit on their own once their pods are gone (and remove their sockets under /run/containerd/s);
    // only the ones still there after a few seconds are killed.
    for (let waited = 0; helperPids().length > 0 && waited < 5000; waited += 100) await new Promise((r) => setTimeout(r, 100));
    killAll(helperPids());
    await unmountAllUnder(dir);
    await net.cleanup();
    for (const d of createdRunDirs) {
      try {
        rmdirSync(d);
      } catch {
        /* not empty: something else uses it now */
      }
    }
    log.end();
  };

  try {
    const version = await waitForServing(runtime, hasExited, logFile, options.readyTimeoutMs ?? 30_000);
    return {
      name,
      description: `containerd ${version}, ${systemdCgroup ? 'SystemdCgroup = true' : 'cgroupfs'}`,
      cgroupDriver: systemdCgroup ? 'systemd' : 'cgroupfs',
      runtime,
      images,
      daemonPid: child.pid!,
      socket,
      helperPids,
      logs: () => readFileSync(logFile, 'utf8'),
      teardown,
    };
  } catch (err) {
    await teardown();
    throw err;
  }
}
