// A one-node "cluster" for tests: the kit's kubelet (1.36 unless asked for another) running standalone with static pods, against a
// skiffd on a private socket, CNI network and state dirs, pulling images from the kit's registry offline:
// served over TLS by default (a throwaway CA skiffd trusts through a certs.d directory), as a company's
// registry is.
// The kubelet lock (/run/skiff-kubelet.lock) is taken here, for the node's whole life, so two test files
// (or a test and an engineer) never run two kubelets at once.
//
//   const node = await startKubeletNode(t);
//   if (!node) return;                       // skipped loudly (no root, kit, runc...); fails under CI=true
//   t.after(() => node.cleanup());
//   const name = node.writePod({ metadata: { name: 'web' }, spec: { containers: [...] } });
//   const pod = await node.waitForPod(name, 'Ready', (p) => isReady(p));
//   const lines = await node.logLines(name, 'web');
//
// Waits are bounded and say what they waited for, with the pod's status and the logs' tails.
import type { TestContext } from 'node:test';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { scaled } from './time-scale.ts';
import { needs, unavailable } from './prereq.ts';
import { skiffdCommand, startSkiffd, type ImageClient, type RuntimeClient, type SkiffdHandle } from './skiffd.ts';
import { createTestNetwork, freePort, skiffdNetworkConfig, type TestNetwork } from './netns.ts';
import { kitMissing, startKitRegistry, startKitRegistryTls, type KitRegistry } from './cri-conformance.ts';
import { getCACertificates, setDefaultCACertificates } from 'node:tls';
import {
  podLogDirs,
  removeAllPods,
  removeKubepodsCgroups,
  removeTree,
  spawnKubelet,
  kubeBinary,
  standaloneKubeletConfig,
  takeKubeletLock,
  type HostLock,
  type KubeletProcess,
  type KubeVersion,
} from './kubelet-host.ts';
import type { KubePod, StatsSummary } from './kube-types.ts';

export type { KubePod, KubeContainerStatus, StatsSummary } from './kube-types.ts';

/** Images the kit's registry serves, by the names a pod spec uses (pulled through skiffd's mirrors). */
export const KIT_IMAGES = {
  /** A busybox root filesystem (sh, httpd, wget, nc, dd...). */
  busybox: 'registry.k8s.io/e2e-test-images/busybox:1.29-2',
  /** A small static program in place of nginx: serves HTTP on $PORT (80). */
  nginx: 'registry.k8s.io/e2e-test-images/nginx:1.14-2',
} as const;

/** Where this kubelet build writes container logs (default podLogsDir). */
export const POD_LOGS_DIR = '/var/log/pods';

export interface KubeletNodeOptions {
  /** argv prefix that runs skiffd (default: SKIFFD_BIN, else the sources through tsx). */
  skiffdCommand?: string[];
  /** Extra skiffd TOML, after the harness's network and registry mirrors. */
  skiffdConfig?: string;
  /** skiffd's --log-level (default info). */
  skiffdLogLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** Kubelet feature gates, e.g. { PodAndContainerStatsFromCRI: true }. */
  featureGates?: Record<string, boolean>;
  /** KubeletConfiguration fields set over the harness's (e.g. containerLogMaxSize, imageGC thresholds). */
  kubeletConfig?: Record<string, unknown>;
  /** How long to wait for the kubelet lock, in seconds (default 1500). */
  lockWaitSeconds?: number;
  /** The kit's Kubernetes release to run the kubelet of (default: the current one). */
  kubeVersion?: KubeVersion;
  /**
   * How the kit's registry is served: `tls` (default; skiffd trusts its CA through `[registry]
   * config_path`, and this test process through its default CA list, for pushes) or `http` (the
   * deprecated `[registry.mirrors]` tables).
   */
  registry?: 'tls' | 'http';
}

export interface KubeletNode {
  /** The node name: the host name in lower case. Static pod NAME runs as NAME-nodeName. */
  nodeName: string;
  dir: string;
  manifestDir: string;
  rootDir: string;
  /** The kubelet's read-only API, http://127.0.0.1:PORT. */
  url: string;
  /** The kit's registry; `caPath` is its CA when it is served over TLS. */
  registry: KitRegistry & { caPath?: string };
  network: TestNetwork;
  /** The skiffd now running (replaced by restartSkiffd). */
  readonly skiffd: SkiffdHandle;
  readonly runtime: RuntimeClient;
  readonly images: ImageClient;

  /** NAME-nodeName. */
  fullName(name: string): string;
  /** Writes (atomically) a static pod manifest named by metadata.name; returns the pod's full name. */
  writePod(pod: { metadata: { name: string } } & Record<string, unknown>): string;
  /** Removes a manifest: the kubelet then stops and removes the pod. Takes the short or the full name. */
  deletePod(name: string): void;
  /** GET a path of the read-only API as JSON. */
  get<T = unknown>(path: string): Promise<T>;
  /** The pods the kubelet reports (/pods). */
  pods(): Promise<KubePod[]>;
  pod(fullName: string): Promise<KubePod | undefined>;
  /** Polls /pods until `check(pod)` is truthy, bounded; fails naming `what`, with the pod's status. */
  waitForPod<T>(fullName: string, what: string, check: (pod: KubePod) => T | undefined | false | null, timeoutMs?: number): Promise<T>;
  /** Waits until the kubelet no longer reports the pod. */
  waitForPodGone(fullName: string, timeoutMs?: number): Promise<void>;
  summary(): Promise<StatsSummary>;
  /** A container's CRI log file for restart `restartCount` (the kubelet names it N.log). */
  logPath(fullName: string, container: string, restartCount?: number): string;
  /** The lines of that log, partial lines joined (the text only). */
  logLines(fullName: string, container: string, restartCount?: number): string[];
  /** The kubelet's log (tail). */
  kubeletLogs(): string;
  /** SIGTERM the kubelet and start it again on the same root dir and manifests. */
  restartKubelet(): Promise<void>;
  /** Stops skiffd (SIGKILL by default, as a crash) and starts it again on the same root, state and socket. */
  restartSkiffd(signal?: NodeJS.Signals): Promise<void>;
  /** Stops the kubelet, removes every pod through the runtime, stops skiffd and the registry, sweeps the host. */
  cleanup(): Promise<void>;
}

/** Missing prerequisites make the test skip loudly (fail under CI=true): then this returns undefined. */
export async function startKubeletNode(t: TestContext, options: KubeletNodeOptions = {}): Promise<KubeletNode | undefined> {
  if (!needs(t, { root: true, commands: ['runc', 'conmon', 'docker-registry', 'flock', 'nsenter', '/usr/lib/cni/bridge', '/usr/lib/cni/portmap'] }))
    return undefined;
  const kubeBin = kubeBinary(options.kubeVersion);
  const missing = kitMissing() ?? (existsSync(kubeBin) ? undefined : `the kit's Kubernetes binary is missing (${kubeBin})`);
  if (missing) {
    unavailable(t, missing);
    return undefined;
  }
  const lock = await takeKubeletLock(options.lockWaitSeconds);
  const cleanups: (() => Promise<void> | void)[] = [() => lock.release()];
  const undo = async () => {
    for (const fn of cleanups.reverse()) await Promise.resolve(fn()).catch((err) => console.error(`kubelet node cleanup: ${(err as Error).message}`));
  };
  try {
    return await startNode(options, lock, cleanups);
  } catch (err) {
    await undo();
    throw err;
  }
}

async function startNode(options: KubeletNodeOptions, lock: HostLock, cleanups: (() => Promise<void> | void)[]): Promise<KubeletNode> {
  // Short paths: conmon's attach sockets live under skiffd's state dir and must fit in sockaddr_un.
  const dir = mkdtempSync(join(tmpdir(), 'skn-'));
  // Searchable by others: a container in a user namespace of its own reaches its files as an unprivileged ID.
  chmodSync(dir, 0o711);
  cleanups.push(() => removeTree(dir));
  const nodeName = hostname().toLowerCase();
  const manifestDir = join(dir, 'manifests');
  const rootDir = join(dir, 'kroot');
  const skiffdDir = join(dir, 'd');
  for (const d of [manifestDir, rootDir, skiffdDir]) mkdirSync(d, { recursive: true });

  const registry: KitRegistry & { caPath?: string } = options.registry === 'http' ? await startKitRegistry(await freePort()) : await startKitRegistryTls();
  cleanups.push(() => registry.stop());
  // A test pushes to the registry with fetch: the CA joins this process's trust, as a node's store would.
  if (registry.caPath) setDefaultCACertificates([...getCACertificates('default'), readFileSync(registry.caPath, 'utf8')]);
  const network = createTestNetwork(join(dir, 'net'));
  cleanups.push(() => network.cleanup());

  const command = options.skiffdCommand ?? skiffdCommand();
  const skiffdToml = `${skiffdNetworkConfig(network)}\n${registry.mirrorsToml}\n${options.skiffdConfig ?? ''}\n`;
  const launchSkiffd = () =>
    startSkiffd({ dir: skiffdDir, command, config: skiffdToml, args: ['--log-level', options.skiffdLogLevel ?? 'info'], startTimeoutMs: 60_000 });
  let skiffd = await launchSkiffd();
  const written = new Set<string>();
  let kubelet: KubeletProcess | undefined;
  let cleaned = false;
  cleanups.push(async () => {
    await kubelet?.stop();
    // A daemon the test killed comes back to clean up after itself.
    if (skiffd.child.exitCode !== null || skiffd.child.signalCode !== null) skiffd = await launchSkiffd();
    await removeAllPods(skiffd.runtime);
    await skiffd.cleanup();
    for (const d of podLogDirs(POD_LOGS_DIR, written)) rmSync(d, { recursive: true, force: true });
    const busy = removeKubepodsCgroups();
    if (busy.length > 0) throw new Error(`pod cgroups still in use after cleanup: ${busy.join(', ')}`);
  });

  const readOnlyPort = await freePort();
  const url = `http://127.0.0.1:${readOnlyPort}`;
  const configFile = join(dir, 'kubelet.yaml');
  const config: Record<string, unknown> = {
    ...standaloneKubeletConfig(skiffd.socket, manifestDir, readOnlyPort),
    // Every pod of a test file pulls at once: the default 5 pulls per second would back some off for 10 s.
    registryPullQPS: 0,
    ...(options.featureGates ? { featureGates: options.featureGates } : {}),
    ...options.kubeletConfig,
  };
  // JSON is YAML: the kubelet reads it as its config file.
  writeFileSync(configFile, JSON.stringify(config, null, 2));
  const kubeletArgs = [`--config=${configFile}`, `--root-dir=${rootDir}`, '--v=2'];
  const logFile = join(dir, 'kubelet.log');

  const get = async <T>(path: string): Promise<T> => {
    const res = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(scaled(10_000)) });
    if (!res.ok) throw new Error(`GET ${path}: HTTP ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  };

  const launchKubelet = async () => {
    const k = spawnKubelet(kubeletArgs, lock, logFile, options.kubeVersion);
    kubelet = k;
    const bound = scaled(90_000);
    const deadline = Date.now() + bound;
    for (;;) {
      if (k.child.exitCode !== null || k.child.signalCode !== null) {
        throw new Error(`the kubelet exited during its start (code ${k.child.exitCode}, signal ${k.child.signalCode}):\n${k.logs().slice(-4000)}`);
      }
      const problem = await get('/pods').then(
        () => '',
        (err: Error) => `/pods: ${err.message}`,
      );
      if (!problem) return;
      if (Date.now() > deadline) throw new Error(`the kubelet did not become healthy within ${bound / 1000} s (${problem}):\n${k.logs().slice(-4000)}`);
      await sleep(250);
    }
  };
  await launchKubelet();

  // One /pods request serves every waiter polling at the same moment.
  let inflight: Promise<KubePod[]> | undefined;
  const pods = () => {
    inflight ??= get<{ items?: KubePod[] }>('/pods')
      .then((list) => list.items ?? [])
      .finally(() => setTimeout(() => (inflight = undefined), 200));
    return inflight;
  };
  const fullName = (name: string) => (name.endsWith(`-${nodeName}`) ? name : `${name}-${nodeName}`);
  const shortName = (name: string) => (name.endsWith(`-${nodeName}`) ? name.slice(0, -nodeName.length - 1) : name);
  const diagnose = () => `kubelet log tail:\n${kubeletTail()}\n\nskiffd log tail:\n${skiffd.logs().slice(-2500)}`;
  // The node status heartbeat fills the log every 10 s and says nothing about pods.
  const kubeletTail = () =>
    (kubelet?.logs() ?? '')
      .split('\n')
      .filter((l) => !l.includes('kubelet_node_status.go'))
      .slice(-25)
      .map((l) => l.slice(0, 600))
      .join('\n');
  let restarting = false;
  const checkKubelet = () => {
    if (!restarting && kubelet && (kubelet.child.exitCode !== null || kubelet.child.signalCode !== null)) {
      throw new Error(`the kubelet exited (code ${kubelet.child.exitCode}, signal ${kubelet.child.signalCode})\n${diagnose()}`);
    }
  };
  const logDir = (full: string) => {
    const [found] = podLogDirs(POD_LOGS_DIR, [full]);
    if (!found) throw new Error(`no log folder for pod ${full} in ${POD_LOGS_DIR}`);
    return found;
  };

  const node: KubeletNode = {
    nodeName,
    dir,
    manifestDir,
    rootDir,
    url,
    registry,
    network,
    get skiffd() {
      return skiffd;
    },
    get runtime() {
      return skiffd.runtime;
    },
    get images() {
      return skiffd.images;
    },
    fullName,
    writePod(pod) {
      const name = pod.metadata.name;
      if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name)) throw new Error(`"${name}" is not a pod name`);
      const full = fullName(name);
      written.add(full);
      // The kubelet skips dot files: write aside, then rename into place.
      const tmp = join(manifestDir, `.${name}.tmp`);
      writeFileSync(tmp, JSON.stringify({ apiVersion: 'v1', kind: 'Pod', ...pod }, null, 2));
      renameSync(tmp, join(manifestDir, `${name}.yaml`));
      return full;
    },
    deletePod(name) {
      rmSync(join(manifestDir, `${shortName(name)}.yaml`), { force: true });
    },
    get,
    pods,
    async pod(full) {
      return (await pods()).find((p) => p.metadata.name === full);
    },
    async waitForPod(full, what, check, bound = 90_000) {
      const timeoutMs = scaled(bound);
      const deadline = Date.now() + timeoutMs;
      let last: KubePod | undefined;
      let lastError = '';
      for (;;) {
        checkKubelet();
        // A kubelet being restarted does not answer for a moment: that is no answer yet, not a failure.
        const list = await pods().catch((err: Error) => {
          lastError = err.message;
          return undefined;
        });
        if (list) last = list.find((p) => p.metadata.name === full);
        const v = list && last ? check(last) : undefined;
        if (v) return v;
        if (Date.now() > deadline) {
          const status = JSON.stringify(last?.status ?? 'not reported', null, 1);
          throw new Error(
            `timed out after ${timeoutMs} ms waiting for ${full}: ${what}\nstatus: ${status}\n${lastError ? `last /pods error: ${lastError}\n` : ''}${diagnose()}`,
          );
        }
        await sleep(300);
      }
    },
    async waitForPodGone(full, bound = 90_000) {
      const timeoutMs = scaled(bound);
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        checkKubelet();
        const list = await pods().catch(() => undefined);
        if (list && !list.some((p) => p.metadata.name === full)) return;
        if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${full} to go\n${diagnose()}`);
        await sleep(300);
      }
    },
    summary: () => get<StatsSummary>('/stats/summary'),
    logPath: (full, container, restartCount = 0) => join(logDir(full), container, `${restartCount}.log`),
    logLines(full, container, restartCount = 0) {
      const file = node.logPath(full, container, restartCount);
      return existsSync(file) ? criLogText(readFileSync(file, 'utf8')) : [];
    },
    kubeletLogs: () => kubelet?.logs() ?? '',
    async restartKubelet() {
      restarting = true;
      try {
        await kubelet?.stop();
        await launchKubelet();
      } finally {
        restarting = false;
      }
    },
    async restartSkiffd(signal = 'SIGKILL') {
      await skiffd.stop(signal).catch(() => {});
      skiffd.channel.close();
      skiffd = await launchSkiffd();
    },
    async cleanup() {
      if (cleaned) return;
      cleaned = true;
      const errors: string[] = [];
      for (const fn of cleanups.reverse()) await Promise.resolve(fn()).catch((err) => errors.push((err as Error).message));
      if (errors.length > 0) throw new Error(`kubelet node cleanup:\n${errors.join('\n')}`);
    },
  };
  return node;
}

/** The text of CRI log lines (`TIME STREAM F|P TEXT`), partial pieces joined per stream. */
export function criLogText(content: string): string[] {
  const out: string[] = [];
  const pending = new Map<string, string>();
  for (const line of content.split('\n')) {
    const m = /^\S+ (stdout|stderr) ([FP]) ?(.*)$/.exec(line);
    if (!m) continue;
    const text = (pending.get(m[1]) ?? '') + m[3];
    if (m[2] === 'P') pending.set(m[1], text);
    else {
      pending.delete(m[1]);
      out.push(text);
    }
  }
  return out;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
