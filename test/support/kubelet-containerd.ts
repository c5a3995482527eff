// A standalone kubelet (the kit's, 1.36) on containerd 2.1 (the kit's containerd2.sh), with the systemd
// cgroup driver where systemd is PID 1, static pods pulled from the kit's registry over plain HTTP: the
// reference a skiffd node is compared with. The kubelet lock is held from start to cleanup.
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startContainerdPeer } from '../../bench/cri/containerd-peer.ts';
import { KIT_PAUSE_IMAGE } from '../../bench/cri/kubelet-node.ts';
import type { Peer } from '../../bench/cri/peer.ts';
import { startKitRegistry } from './cri-conformance.ts';
import type { KubePod, StatsSummary } from './kube-types.ts';
import { podLogDirs, removeKubepodsCgroups, removeTree, spawnKubelet, standaloneKubeletConfig, takeKubeletLock, type KubeletProcess } from './kubelet-host.ts';
import { POD_LOGS_DIR } from './kubelet.ts';
import { freePort } from './netns.ts';
import { scaled } from './time-scale.ts';

/** Where cAdvisor, inside the kubelet, looks for containerd. */
const DEFAULT_SOCKET = '/run/containerd/containerd.sock';

export interface ContainerdKubelet {
  containerd: Peer;
  nodeName: string;
  url: string;
  /** Writes a static pod; returns its full name (NAME-nodeName). */
  writePod(pod: { metadata: { name: string } } & Record<string, unknown>): string;
  pods(): Promise<KubePod[]>;
  summary(): Promise<StatsSummary>;
  /** The text of GET `path` (e.g. /metrics/cadvisor). */
  text(path: string): Promise<string>;
  kubeletLogs(): string;
  cleanup(): Promise<void>;
}

export async function startContainerdKubelet(kubeletConfig: Record<string, unknown> = {}): Promise<ContainerdKubelet> {
  const undo: (() => Promise<void> | void)[] = [];
  const cleanup = async () => {
    const errors: string[] = [];
    for (const fn of undo.splice(0).reverse()) await Promise.resolve(fn()).catch((err: Error) => errors.push(err.message));
    if (errors.length > 0) throw new Error(`containerd kubelet cleanup:\n${errors.join('\n')}`);
  };
  try {
    const lock = await takeKubeletLock();
    undo.push(() => lock.release());
    const dir = mkdtempSync(join(tmpdir(), 'skc-'));
    undo.push(() => removeTree(dir));
    const registry = await startKitRegistry(await freePort());
    undo.push(() => registry.stop());
    const mirrors = Object.fromEntries(['registry.k8s.io', 'k8s.gcr.io', 'gcr.io', 'docker.io'].map((h) => [h, registry.url]));
    // An emulated node starts containerd's plugins slowly: the wait scales with the machine.
    const containerd = await startContainerdPeer(join(dir, 'ctd'), `127.0.0.1:${registry.port}`, KIT_PAUSE_IMAGE, mirrors, '2.1', {
      readyTimeoutMs: scaled(30_000),
    });
    const written = new Set<string>();
    undo.push(async () => {
      await containerd.teardown();
      for (const d of podLogDirs(POD_LOGS_DIR, written)) rmSync(d, { recursive: true, force: true });
      const busy = removeKubepodsCgroups();
      if (busy.length > 0) throw new Error(`pod cgroups still in use after containerd stopped: ${busy.join(', ')}`);
    });
    // The kubelet's cAdvisor finds containerd's containers (and their pod labels) only through containerd's
    // default socket: on a node of its own, this containerd is reached there too.
    if (!existsSync(DEFAULT_SOCKET)) {
      const made = !existsSync(dirname(DEFAULT_SOCKET));
      mkdirSync(dirname(DEFAULT_SOCKET), { recursive: true });
      symlinkSync(containerd.socket, DEFAULT_SOCKET);
      undo.push(() => {
        rmSync(DEFAULT_SOCKET, { force: true });
        if (made) rmSync(dirname(DEFAULT_SOCKET), { recursive: true, force: true });
      });
    }
    const manifestDir = join(dir, 'manifests');
    const rootDir = join(dir, 'kroot');
    for (const d of [manifestDir, rootDir]) mkdirSync(d, { recursive: true });
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const configFile = join(dir, 'kubelet.yaml');
    const config = {
      ...standaloneKubeletConfig(containerd.socket, manifestDir, port),
      cgroupDriver: containerd.cgroupDriver,
      registryPullQPS: 0,
      ...kubeletConfig,
    };
    writeFileSync(configFile, JSON.stringify(config, null, 2));
    const kubelet: KubeletProcess = spawnKubelet([`--config=${configFile}`, `--root-dir=${rootDir}`, '--v=2'], lock, join(dir, 'kubelet.log'));
    undo.push(() => kubelet.stop());
    const fetchOk = async (path: string) => {
      const res = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(scaled(10_000)) });
      if (!res.ok) throw new Error(`GET ${path}: HTTP ${res.status} ${await res.text()}`);
      return res;
    };
    const deadline = Date.now() + scaled(90_000);
    for (;;) {
      if (kubelet.child.exitCode !== null || kubelet.child.signalCode !== null) {
        throw new Error(`the kubelet on containerd exited during its start:\n${kubelet.logs().slice(-4000)}`);
      }
      if (
        await fetchOk('/pods').then(
          () => true,
          () => false,
        )
      )
        break;
      if (Date.now() > deadline) throw new Error(`the kubelet on containerd did not answer /pods in time:\n${kubelet.logs().slice(-4000)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    const nodeName = hostname().toLowerCase();
    return {
      containerd,
      nodeName,
      url,
      writePod(pod) {
        const full = `${pod.metadata.name}-${nodeName}`;
        written.add(full);
        const tmp = join(manifestDir, `.${pod.metadata.name}.tmp`);
        writeFileSync(tmp, JSON.stringify({ apiVersion: 'v1', kind: 'Pod', ...pod }, null, 2));
        renameSync(tmp, join(manifestDir, `${pod.metadata.name}.yaml`));
        return full;
      },
      pods: async () => ((await (await fetchOk('/pods')).json()) as { items?: KubePod[] }).items ?? [],
      summary: async () => (await (await fetchOk('/stats/summary')).json()) as StatsSummary,
      text: async (path) => (await fetchOk(path)).text(),
      kubeletLogs: () => kubelet.logs(),
      cleanup,
    };
  } catch (err) {
    await cleanup().catch((e: Error) => console.error(e.message));
    throw err;
  }
}
