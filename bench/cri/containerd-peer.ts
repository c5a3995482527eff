// containerd (Debian's 1.6.20) as the reference peer: its own root, state, sockets, runc root and
// CNI network under the run's temp dir, configured like a kubelet node would be (CRI plugin, runc v2
// shim, overlayfs) plus what this VM needs (restrict_oom_score_adj: no CAP_SYS_RESOURCE here).
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createChannel, createClient } from 'nice-grpc';
import { ImageServiceDefinition, RuntimeServiceDefinition } from '../../proto/gen/runtime/v1/api.ts';
import { systemdBooted } from '../../node/skiffd/cgroups/driver.ts';
import { deleteRuncContainers, killAll, listProcesses, onPath, unmountAllUnder } from './host.ts';
import { PAUSE_ARGV } from './images.ts';
import { createNetwork } from './network.ts';
import type { Peer } from './peer.ts';
import { removeAllPods } from './workload.ts';

export const CONTAINERD_INSTALL_HINT = 'apt-get install containerd   # Debian 12: containerd 1.6.20';

export function containerdBinary(): string | undefined {
  return onPath('containerd');
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

export async function startContainerdPeer(dir: string, registryHost: string, sandboxImage: string, mirrors: Record<string, string> = {}): Promise<Peer> {
  const bin = containerdBinary();
  if (!bin) throw new Error(`containerd is not installed (${CONTAINERD_INSTALL_HINT})`);
  const root = join(dir, 'root');
  const state = join(dir, 'state');
  const socket = join(dir, 'containerd.sock');
  const runcRoot = join(state, 'runc');
  for (const d of [root, state]) mkdirSync(d, { recursive: true });
  const net = createNetwork(join(dir, 'cni'), 'ctb', 'containerd');
  const configFile = join(dir, 'config.toml');
  // Matched to the host, as a node is set up: the systemd driver where systemd is PID 1.
  const systemdCgroup = systemdBooted();
  writeFileSync(configFile, configToml({ root, state, socket, runcRoot, cniConfDir: net.confDir, sandboxImage, registryHost, mirrors, systemdCgroup }));

  // containerd 1.6 puts shim sockets under /run/containerd/s whatever its state dir is; remove the
  // (empty) directories afterwards if this run created them.
  const createdRunDirs = ['/run/containerd', '/run/containerd/s'].filter((d) => !existsSync(d)).reverse();

  const logFile = join(dir, 'containerd.log');
  const log = createWriteStream(logFile);
  const child = spawn(bin, ['--config', configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
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
    const version = await waitForServing(runtime, hasExited, logFile, 30_000);
    return {
      name: 'containerd',
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
