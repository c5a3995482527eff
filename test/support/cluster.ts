// A real Kubernetes cluster on this machine for tests: the kit's control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, started by its cluster.sh on free loopback ports) and skiffd
// as the node `localhost`, driven by the kit's kubelet joined to that API server. Tests act only as a
// user does: kubectl against the API server. The kubelet lock is held for the cluster's whole life, so a
// cluster and a standalone kubelet test never share this host's /kubepods.
//
//   const cluster = await startCluster(t);
//   if (!cluster) return;                   // skipped loudly (no root, kit, etcd...); fails under CI=true
//   t.after(() => cluster.cleanup());
//   await cluster.apply(deployment);
//   const pod = await cluster.waitForPod('ns', 'name', 'Running', (p) => p.status.phase === 'Running' && p);
//
// Waits are bounded and say what they waited for, with the pod's status, its events and the logs' tails.
import type { TestContext } from 'node:test';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { needs, unavailable } from './prereq.ts';
import { runCommand, type CommandOptions, type CommandResult } from './commands.ts';
import { skiffdCommand, startSkiffd, type ImageClient, type RuntimeClient, type SkiffdHandle } from './skiffd.ts';
import { createTestNetwork, defaultRouteAddress, freePort, skiffdNetworkConfig, type TestNetwork } from './netns.ts';
import { kitDir, kitMissing, startKitRegistry, type KitRegistry } from './cri-conformance.ts';
import {
  CURRENT_KUBE,
  kubeBinary,
  removeAllPods,
  removeKubepodsCgroups,
  removeTree,
  spawnKubelet,
  takeKubeletLock,
  type HostLock,
  type KubeletProcess,
  type KubeVersion,
} from './kubelet-host.ts';
import { kubeApi, type KubeApi } from './kube-api.ts';
import { scaled } from './time-scale.ts';
import type { KubePod, StatsSummary } from './kube-types.ts';

export const clusterScript = join(kitDir, 'cluster.sh');

export interface ClusterOptions {
  /** argv prefix that runs skiffd (default: SKIFFD_BIN, else the sources through tsx). */
  skiffdCommand?: string[];
  /** skiffd's working directory (a build tested alone in a directory). */
  skiffdCwd?: string;
  /** Extra skiffd TOML, after the harness's network and registry mirrors. */
  skiffdConfig?: string;
  /** KubeletConfiguration fields set over the harness's. */
  kubeletConfig?: Record<string, unknown>;
  lockWaitSeconds?: number;
  /** The kit's Kubernetes release for the control plane and the kubelet (default: the current one). */
  kubeVersion?: KubeVersion;
}

export interface KubeEvent {
  type: string;
  reason: string;
  message: string;
  involvedObject: { kind: string; name: string; namespace?: string; fieldPath?: string };
}

export interface KubeNode {
  metadata: { name: string; labels?: Record<string, string> };
  spec: { unschedulable?: boolean; taints?: { key: string; effect: string }[] };
  status: {
    capacity: Record<string, string>;
    allocatable: Record<string, string>;
    conditions: { type: string; status: string; reason?: string; message?: string }[];
    addresses: { type: string; address: string }[];
    nodeInfo: { containerRuntimeVersion: string; kubeletVersion: string; osImage: string; architecture: string };
    images?: { names: string[]; sizeBytes: number }[];
    daemonEndpoints: { kubeletEndpoint: { Port: number } };
  };
}

/** The kubelet settings of a node joined to the cluster: x509 and webhook auth, its own port and pod log dir. */
export function joinedKubeletConfig(o: {
  socket: string;
  address: string;
  port: number;
  clusterDir: string;
  nodeName: string;
  podLogsDir: string;
}): Record<string, unknown> {
  const certs = join(o.clusterDir, 'nodes', o.nodeName);
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    containerRuntimeEndpoint: `unix://${o.socket}`,
    imageServiceEndpoint: `unix://${o.socket}`,
    cgroupDriver: 'cgroupfs',
    failSwapOn: false,
    failCgroupV1: false,
    address: o.address,
    port: o.port,
    readOnlyPort: 0,
    healthzPort: 0,
    tlsCertFile: join(certs, 'kubelet.crt'),
    tlsPrivateKeyFile: join(certs, 'kubelet.key'),
    authentication: { anonymous: { enabled: false }, webhook: { enabled: true }, x509: { clientCAFile: join(o.clusterDir, 'pki', 'ca.crt') } },
    authorization: { mode: 'Webhook' },
    podLogsDir: o.podLogsDir,
    enforceNodeAllocatable: [],
    evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%', 'nodefs.inodesFree': '1%' },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    serializeImagePulls: false,
    // Every pod of a test file pulls at once: the default 5 pulls per second would back some off for 10 s.
    registryPullQPS: 0,
    // A configMap update reaches mounted files at the pod's next sync; a user tunes this the same way.
    syncFrequency: '10s',
  };
}

export interface ControlPlane {
  dir: string;
  kubeconfig: string;
  server: string;
  api: KubeApi;
  /** kubectl as cluster-admin, bounded. */
  kubectl(args: string[], options?: CommandOptions): Promise<CommandResult>;
  /** Writes a node's client certificate and kubeconfig; returns the kubeconfig's path. */
  addNodeCredentials(name: string): Promise<string>;
  logTail(component: string, chars?: number): string;
  stop(): Promise<void>;
}

/** Free TCP ports `port` and `port + 1` on loopback (etcd's client and peer ports). */
async function freePortPair(): Promise<number> {
  const { createServer } = await import('node:net');
  const free = (port: number) =>
    new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
  for (let i = 0; i < 50; i++) {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    if ((await free(port)) && (await free(port + 1))) return port;
  }
  throw new Error('no two free consecutive ports for etcd');
}

/** Starts etcd and the control plane with the kit's cluster.sh under `dir`; bounded, with the logs on failure. */
export async function startControlPlane(dir: string, version: KubeVersion = CURRENT_KUBE): Promise<ControlPlane> {
  const env = { ETCD_PORT: String(await freePortPair()), APISERVER_PORT: String(await freePort()), KUBE_BIN: kubeBinary(version) };
  const server = `https://127.0.0.1:${env.APISERVER_PORT}`;
  const logTail = (component: string, chars = 3000) => {
    const file = join(dir, 'logs', `${component}.log`);
    return existsSync(file) ? readFileSync(file, 'utf8').slice(-chars) : `(no ${file})`;
  };
  const stop = async () => {
    await runCommand('bash', [clusterScript, 'down', dir], { env, timeoutMs: 30_000 });
    // cluster.sh signals by pid and returns; wait until etcd let go of its data dir.
    for (let i = 0; i < 100 && (await runCommand('pgrep', ['-f', `--data-dir ${join(dir, 'etcd')}`])).code === 0; i++) await sleep(100);
  };
  // cluster.sh bounds its own wait for the API server (120 tries); this bound only backs it up.
  const up = await runCommand('bash', [clusterScript, 'up', dir], { env, timeoutMs: scaled(600_000) }).catch((err: Error) => ({
    code: -1,
    stdout: '',
    stderr: err.message,
  }));
  if (up.code !== 0) {
    await stop();
    throw new Error(`cluster.sh up failed (${up.code}): ${up.stderr}\nkube-apiserver: ${logTail('kube-apiserver')}\netcd: ${logTail('etcd')}`);
  }
  const kubeconfig = join(dir, 'admin.kubeconfig');
  const api = kubeApi({ server, caFile: join(dir, 'pki', 'ca.crt'), certFile: join(dir, 'pki', 'admin.crt'), keyFile: join(dir, 'pki', 'admin.key') });
  return {
    dir,
    kubeconfig,
    server,
    api,
    kubectl: (args, options = {}) => runCommand('kubectl', ['--kubeconfig', kubeconfig, ...args], { timeoutMs: 60_000, ...options }),
    async addNodeCredentials(name) {
      const r = await runCommand('bash', [clusterScript, 'node', dir, name], { env, timeoutMs: 30_000 });
      if (r.code !== 0) throw new Error(`cluster.sh node ${name} failed: ${r.stderr}`);
      return r.stdout.trim();
    },
    logTail,
    stop,
  };
}

export interface JoinedKubelet {
  nodeName: string;
  port: number;
  rootDir: string;
  podLogsDir: string;
  readonly process: KubeletProcess;
  logs(): string;
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** Runs the kit's kubelet joined to the control plane as node `nodeName`, until the node is Ready. */
export async function joinKubelet(
  cp: ControlPlane,
  lock: HostLock,
  o: { nodeName: string; address: string; socket: string; dir: string; config?: Record<string, unknown>; version?: KubeVersion },
): Promise<JoinedKubelet> {
  const kubeconfig = await cp.addNodeCredentials(o.nodeName);
  const port = await freePort();
  const rootDir = join(o.dir, 'kroot');
  const podLogsDir = join(o.dir, 'pod-logs');
  for (const d of [rootDir, podLogsDir]) mkdirSync(d, { recursive: true });
  const configFile = join(o.dir, 'kubelet.yaml');
  const config = {
    ...joinedKubeletConfig({ socket: o.socket, address: o.address, port, clusterDir: cp.dir, nodeName: o.nodeName, podLogsDir }),
    ...o.config,
  };
  // JSON is YAML: the kubelet reads it as its config file.
  writeFileSync(configFile, JSON.stringify(config, null, 2));
  const args = [
    `--config=${configFile}`,
    `--kubeconfig=${kubeconfig}`,
    `--hostname-override=${o.nodeName}`,
    `--root-dir=${rootDir}`,
    // The kubelet's container collection counts a container that is created but not yet started as
    // dead, so with the default of one dead container per pod and container, a collection that runs
    // while a restarted container starts removes the previous run, and with it the pod's lastState and
    // `kubectl logs --previous`. On a fast node that window is milliseconds; on the emulated node,
    // starting with a dozen pods, it is seconds. Two kept make the tests independent of that race.
    '--maximum-dead-containers-per-container=2',
    '--v=2',
  ];
  const logFile = join(o.dir, 'kubelet.log');
  let proc: KubeletProcess;
  const launch = async () => {
    const since = new Date();
    proc = spawnKubelet(args, lock, logFile, o.version);
    const bound = scaled(120_000);
    const deadline = Date.now() + bound;
    for (;;) {
      if (proc.child.exitCode !== null || proc.child.signalCode !== null)
        throw new Error(`the kubelet of ${o.nodeName} exited during its start (code ${proc.child.exitCode}):\n${proc.logs().slice(-4000)}`);
      const node = await cp.api.find<KubeNode>(`/api/v1/nodes/${o.nodeName}`).catch(() => undefined);
      const ready = node?.status.conditions?.find((c) => c.type === 'Ready');
      // A restarted kubelet reports Ready again only after its first status update since the restart.
      const fresh = ready && new Date((ready as { lastHeartbeatTime?: string }).lastHeartbeatTime ?? 0).getTime() >= since.getTime() - 1000;
      if (ready?.status === 'True' && fresh) return;
      if (Date.now() > deadline)
        throw new Error(
          `node ${o.nodeName} was not Ready within ${bound / 1000} s (${JSON.stringify(ready ?? 'not registered')}):\n${proc.logs().slice(-4000)}`,
        );
      await sleep(300);
    }
  };
  await launch();
  return {
    nodeName: o.nodeName,
    port,
    rootDir,
    podLogsDir,
    get process() {
      return proc;
    },
    logs: () => proc.logs(),
    async restart() {
      await proc.stop();
      await launch();
    },
    stop: () => proc.stop(),
  };
}

export interface Cluster {
  dir: string;
  kubeconfig: string;
  /** skiffd's node. */
  nodeName: string;
  api: KubeApi;
  controlPlane: ControlPlane;
  registry: KitRegistry;
  network: TestNetwork;
  readonly skiffd: SkiffdHandle;
  readonly runtime: RuntimeClient;
  readonly images: ImageClient;
  readonly kubelet: JoinedKubelet;
  /** The lock this cluster holds (a second kubelet takes it through this). */
  lock: HostLock;

  kubectl(args: string[], options?: CommandOptions): Promise<CommandResult>;
  /** kubectl that must succeed: its stdout, or an error with stderr. */
  kubectlOk(args: string[], options?: CommandOptions): Promise<string>;
  /** `kubectl apply` of objects (JSON), server-side validated. */
  apply(...objects: Record<string, unknown>[]): Promise<void>;
  /** Creates a namespace for a test. */
  namespace(name: string): Promise<string>;
  pod(ns: string, name: string): Promise<KubePod | undefined>;
  pods(ns: string, labelSelector?: string): Promise<KubePod[]>;
  events(ns: string, name?: string): Promise<KubeEvent[]>;
  node(name?: string): Promise<KubeNode>;
  /** Polls the pod until `check` is truthy, bounded; fails naming `what` with status, events and logs. */
  waitForPod<T>(ns: string, name: string, what: string, check: (pod: KubePod) => T | undefined | false | null, timeoutMs?: number): Promise<T>;
  /** Polls `fn` until truthy, bounded; fails naming `what` with the logs' tails. */
  waitFor<T>(what: string, fn: () => Promise<T | undefined | false | null> | T | undefined | false | null, timeoutMs?: number): Promise<T>;
  /** The kubelet's /stats/summary, read as the API server would (its kubelet client certificate). */
  statsSummary(): Promise<StatsSummary>;
  diagnose(): string;
  /** Stops skiffd (SIGKILL by default, as a crash) and starts it again on the same root, state and socket. */
  restartSkiffd(signal?: NodeJS.Signals): Promise<void>;
  restartKubelet(): Promise<void>;
  /** Adds a cleanup step run before the cluster's own (e.g. a second node). */
  onCleanup(fn: () => Promise<void> | void): void;
  cleanup(): Promise<void>;
}

/** Missing prerequisites make the test skip loudly (fail under CI=true): then this returns undefined. */
export async function startCluster(t: TestContext, options: ClusterOptions = {}): Promise<Cluster | undefined> {
  const commands = ['runc', 'conmon', 'docker-registry', 'flock', 'nsenter', 'etcd', 'openssl', 'kubectl', '/usr/lib/cni/bridge', '/usr/lib/cni/portmap'];
  if (!needs(t, { root: true, commands })) return undefined;
  const missing = kitMissing() ?? [kubeBinary(options.kubeVersion), clusterScript].map((f) => (existsSync(f) ? undefined : `the kit lacks ${f}`)).find(Boolean);
  if (missing) {
    unavailable(t, missing);
    return undefined;
  }
  const lock = await takeKubeletLock(options.lockWaitSeconds);
  const cleanups: (() => Promise<void> | void)[] = [() => lock.release()];
  try {
    return await start(options, lock, cleanups);
  } catch (err) {
    for (const fn of cleanups.reverse()) await Promise.resolve(fn()).catch((e: Error) => console.error(`cluster cleanup: ${e.message}`));
    throw err;
  }
}

/**
 * `localhost`, as on a workstation, where the kubelet reports the address of the interface with the
 * default route. A machine with no such interface (the emulated Debian node has no network card) would
 * leave the node with no address at all, and the API server could not reach the kubelet for logs and
 * exec; named by its loopback address, the node reports that address.
 */
function nodeNameForThisHost(): string {
  return defaultRouteAddress() === undefined ? '127.0.0.1' : 'localhost';
}

async function start(options: ClusterOptions, lock: HostLock, cleanups: (() => Promise<void> | void)[]): Promise<Cluster> {
  // Short paths: conmon's attach sockets live under skiffd's state dir and must fit in sockaddr_un.
  const dir = mkdtempSync(join(tmpdir(), 'skc-'));
  chmodSync(dir, 0o711);
  cleanups.push(() => removeTree(dir));
  const nodeName = nodeNameForThisHost();

  const cp = await startControlPlane(join(dir, 'cp'), options.kubeVersion);
  cleanups.push(() => cp.stop());
  const registry = await startKitRegistry(await freePort());
  cleanups.push(() => registry.stop());
  const network = createTestNetwork(join(dir, 'net'));
  cleanups.push(() => network.cleanup());

  const skiffdDir = join(dir, 'd');
  mkdirSync(skiffdDir);
  const command = options.skiffdCommand ?? skiffdCommand();
  const skiffdToml = `${skiffdNetworkConfig(network)}\n${registry.mirrorsToml}\n${options.skiffdConfig ?? ''}\n`;
  const launchSkiffd = () =>
    startSkiffd({ dir: skiffdDir, command, cwd: options.skiffdCwd, config: skiffdToml, args: ['--log-level', 'info'], startTimeoutMs: 60_000 });
  let skiffd = await launchSkiffd();
  let kubelet: JoinedKubelet | undefined;
  const extra: (() => Promise<void> | void)[] = [];
  cleanups.push(async () => {
    for (const fn of extra.reverse()) await Promise.resolve(fn()).catch((e: Error) => console.error(`cluster cleanup: ${e.message}`));
    await kubelet?.stop();
    // A daemon the test killed comes back to clean up after itself.
    if (skiffd.child.exitCode !== null || skiffd.child.signalCode !== null) skiffd = await launchSkiffd();
    await removeAllPods(skiffd.runtime);
    await skiffd.cleanup();
    const busy = removeKubepodsCgroups();
    if (busy.length > 0) throw new Error(`pod cgroups still in use after cleanup: ${busy.join(', ')}`);
  });

  kubelet = await joinKubelet(cp, lock, {
    nodeName,
    address: '127.0.0.1',
    socket: skiffd.socket,
    dir: join(dir, 'node'),
    config: options.kubeletConfig,
    version: options.kubeVersion,
  });
  const joined = kubelet;

  const kubeletTail = () =>
    joined
      .logs()
      .split('\n')
      .filter((l) => !l.includes('kubelet_node_status.go') && !l.includes('reflector.go'))
      .slice(-25)
      .map((l) => l.slice(0, 600))
      .join('\n');
  const diagnose = () => `kubelet log tail:\n${kubeletTail()}\n\nskiffd log tail:\n${skiffd.logs().slice(-2500)}`;
  const pki = join(cp.dir, 'pki');
  const kubeletApi = kubeApi({
    server: `https://127.0.0.1:${joined.port}`,
    caFile: join(pki, 'ca.crt'),
    certFile: join(pki, 'apiserver-kubelet-client.crt'),
    keyFile: join(pki, 'apiserver-kubelet-client.key'),
  });
  const kubectl = cp.kubectl;
  const kubectlOk = async (args: string[], o?: CommandOptions) => {
    const r = await kubectl(args, o);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${r.code}: ${r.stderr || r.stdout}`);
    return r.stdout;
  };
  const events = async (ns: string, name?: string) => {
    const selector = name ? `?fieldSelector=${encodeURIComponent(`involvedObject.name=${name}`)}` : '';
    return (await cp.api.get<{ items: KubeEvent[] }>(`/api/v1/namespaces/${ns}/events${selector}`)).items;
  };
  const pod = (ns: string, name: string) => cp.api.find<KubePod>(`/api/v1/namespaces/${ns}/pods/${name}`);
  const waitFor = async <T>(what: string, fn: () => Promise<T | undefined | false | null> | T | undefined | false | null, bound = 90_000): Promise<T> => {
    const timeoutMs = scaled(bound);
    const deadline = Date.now() + timeoutMs;
    let lastError = '';
    for (;;) {
      const v = await Promise.resolve()
        .then(fn)
        .catch((err: Error) => {
          lastError = err.message;
          return undefined;
        });
      if (v) return v;
      if (Date.now() > deadline)
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${lastError})` : ''}\n${diagnose()}`);
      await sleep(300);
    }
  };

  const cluster: Cluster = {
    dir,
    kubeconfig: cp.kubeconfig,
    nodeName,
    api: cp.api,
    controlPlane: cp,
    registry,
    network,
    lock,
    get skiffd() {
      return skiffd;
    },
    get runtime() {
      return skiffd.runtime;
    },
    get images() {
      return skiffd.images;
    },
    get kubelet() {
      return joined;
    },
    kubectl,
    kubectlOk,
    async apply(...objects) {
      await kubectlOk(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }) });
    },
    async namespace(name) {
      await kubectlOk(['create', 'namespace', name]);
      // Pods need the namespace's default service account, which a controller creates.
      await waitFor(`service account default in ${name}`, () => cp.api.find(`/api/v1/namespaces/${name}/serviceaccounts/default`), 60_000);
      return name;
    },
    pod,
    async pods(ns, labelSelector) {
      const q = labelSelector ? `?labelSelector=${encodeURIComponent(labelSelector)}` : '';
      return (await cp.api.get<{ items: KubePod[] }>(`/api/v1/namespaces/${ns}/pods${q}`)).items;
    },
    events,
    node: (name = nodeName) => cp.api.get<KubeNode>(`/api/v1/nodes/${name}`),
    async waitForPod(ns, name, what, check, bound = 90_000) {
      const timeoutMs = scaled(bound);
      const deadline = Date.now() + timeoutMs;
      let last: KubePod | undefined;
      for (;;) {
        last = await pod(ns, name).catch(() => last);
        const v = last ? check(last) : undefined;
        if (v) return v;
        if (Date.now() > deadline) {
          const evs = await events(ns, name).catch(() => []);
          throw new Error(
            `timed out after ${timeoutMs} ms waiting for pod ${ns}/${name}: ${what}\nstatus: ${JSON.stringify(last?.status ?? 'no such pod', null, 1)}\nevents:\n${evs
              .map((e) => `  ${e.type} ${e.reason}: ${e.message}`)
              .join('\n')}\n${diagnose()}`,
          );
        }
        await sleep(300);
      }
    },
    waitFor,
    // The kubelet's API as the API server reaches it: its kubelet-client certificate; the kubelet's
    // serving certificate is signed by the cluster's CA.
    statsSummary: () => kubeletApi.get<StatsSummary>('/stats/summary'),
    diagnose,
    async restartSkiffd(signal = 'SIGKILL') {
      await skiffd.stop(signal).catch(() => {});
      skiffd.channel.close();
      skiffd = await launchSkiffd();
    },
    restartKubelet: () => joined.restart(),
    onCleanup(fn) {
      extra.push(fn);
    },
    async cleanup() {
      const errors: string[] = [];
      for (const fn of cleanups.splice(0).reverse()) await Promise.resolve(fn()).catch((err: Error) => errors.push(err.message));
      if (errors.length > 0) throw new Error(`cluster cleanup:\n${errors.join('\n')}`);
    },
  };
  return cluster;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
