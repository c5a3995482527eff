// What a node pays for its runtime while a kubelet drives it: the kit's kubelet 1.36 standalone, N static
// pods (the kit's nginx stand-in with an HTTP readiness probe every 2 s and an exec liveness probe every
// 5 s), against one runtime with a fresh state. Measured: the time from the manifests appearing to every
// pod Ready, CPU ticks from /proc over a steady window (the daemon, the helpers it runs, the kubelet)
// and PSS from smaps_rollup. The kubelet lock is held from the kubelet's start to the end of cleanup.
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import {
  podLogDirs,
  removeKubepodsCgroups,
  removeTree,
  spawnKubelet,
  standaloneKubeletConfig,
  takeKubeletLock,
  type KubeletProcess,
} from '../../test/support/kubelet-host.ts';
import { freePort } from '../../test/support/netns.ts';
import { listProcesses, memoryOf, sumMemory, type Memory } from './host.ts';
import { CONTAINERD_RELEASE, type Peer, type PeerName } from './peer.ts';
import { cpuTicks, snapshot, spent, ticksPerSecond } from './proc-cpu.ts';
import { removeAllPods } from './workload.ts';
import { ContainerState } from '../../proto/gen/runtime/v1/api.ts';

export const NGINX_IMAGE = 'registry.k8s.io/e2e-test-images/nginx:1.14-2';
export const KIT_PAUSE_IMAGE = 'registry.k8s.io/pause:3.9';
export const KUBELET_LOCK_WAIT_S = 1500;

export interface NodeCostOptions {
  pods: number;
  /** Seconds of steady state measured, after every pod is Ready and `settleS` more. */
  steadyS: number;
  settleS: number;
  readyTimeoutS: number;
}

/** CPU in percent of one core over the window. */
export interface NodeCpu {
  daemon: number;
  helpers: number;
  total: number;
  kubelet: number;
}

export interface NodePss {
  /** kB */
  daemon: number;
  helpers: number;
  total: number;
}

export interface NodeCostResult {
  runtime: PeerName;
  description: string;
  pods: number;
  /** Seconds from the manifests being written to every pod Ready; undefined if they never were. */
  readyS?: number;
  /**
   * Seconds from the manifests being written to every pod's container running, as the runtime itself
   * lists them (ListContainers): start-up without the kubelet's probe period and relist in it.
   */
  runningS?: number;
  windowS: number;
  /** The window on CLOCK_MONOTONIC in µs (the clock of a V8 CPU profile's timestamps), to cut a profile to it. */
  windowMonotonicUs?: [number, number];
  cpu?: NodeCpu;
  pss?: NodePss;
  /** Per-container helper processes at the end of the window (conmon + catatonit; shim + pause). */
  helperProcesses?: number;
  /** Container restarts seen at the end of the window (a failing liveness probe would show here). */
  restarts?: number;
  loadAverage: string;
  errors: string[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

interface KubePodLite {
  metadata: { name: string };
  status?: { conditions?: { type: string; status: string }[]; containerStatuses?: { restartCount?: number }[] };
}

export function podManifest(name: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'web',
          image: NGINX_IMAGE,
          imagePullPolicy: 'IfNotPresent',
          resources: { requests: { cpu: '5m', memory: '4Mi' } },
          ports: [{ containerPort: 80 }],
          readinessProbe: { httpGet: { path: '/', port: 80 }, periodSeconds: 2, timeoutSeconds: 5, failureThreshold: 3 },
          livenessProbe: { exec: { command: ['true'] }, periodSeconds: 5, timeoutSeconds: 5, failureThreshold: 3 },
        },
      ],
    },
  };
}

// 100 pods and more: above the default maxPods of 110 with room to spare.
function kubeletConfig(socket: string, manifestDir: string, readOnlyPort: number): Record<string, unknown> {
  return { ...standaloneKubeletConfig(socket, manifestDir, readOnlyPort), maxPods: 250 };
}

export interface SteadyWindow {
  windowS: number;
  windowMonotonicUs: [number, number];
  cpu: NodeCpu;
  pss: NodePss;
  helperProcesses: number;
  loadAverage: string;
}

/**
 * CPU over `steadyS` seconds and PSS after it, of the runtime (its daemon; its per-container helpers,
 * long-lived children and whatever they reaped) and of the kubelet, read from /proc.
 */
export async function measureSteadyWindow(peer: Peer, kubeletPid: number, steadyS: number): Promise<SteadyWindow> {
  // The processes of the window: the daemon, its own long-lived children (skiffd's helper shells),
  // the per-container helpers, the kubelet.
  const daemon = peer.daemonPid;
  const helpers = new Set(peer.helperPids());
  const daemonChildren = listProcesses()
    .filter((p) => p.ppid === daemon && !helpers.has(p.pid))
    .map((p) => p.pid);
  const all = [daemon, kubeletPid, ...helpers, ...daemonChildren];
  let load = loadAverage();
  const monoUs = () => Number(process.hrtime.bigint() / 1000n);
  const before = snapshot(all);
  const started = performance.now();
  const monoStart = monoUs();
  await sleep(steadyS * 1000);
  const after = snapshot(all);
  const windowMonotonicUs: [number, number] = [monoStart, monoUs()];
  const seconds = (performance.now() - started) / 1000;
  load += ` -> ${loadAverage()}`;
  const pct = (ticks: number) => (100 * ticks) / ticksPerSecond() / seconds;
  const d = spent(before, after, [daemon]);
  const h = spent(before, after, [...helpers, ...daemonChildren]);
  const k = spent(before, after, [kubeletPid]);
  // The daemon is its own process; what it spawned and reaped (runc exec for skiffd's probes) is a
  // helper's cost, as runc exec under containerd's shim is.
  const cpu = { daemon: pct(d.self), helpers: pct(d.reaped + h.self + h.reaped), kubelet: pct(k.self + k.reaped), total: 0 };
  cpu.total = cpu.daemon + cpu.helpers;
  const readings: { d: Memory; h: Memory }[] = [];
  for (let i = 0; i < 3; i++) {
    if (i > 0) await sleep(500);
    readings.push({ d: memoryOf(daemon), h: sumMemory([...helpers, ...daemonChildren]) });
  }
  const med = (v: number[]) => [...v].sort((a, b) => a - b)[1];
  const pss = { daemon: med(readings.map((r) => r.d.pss)), helpers: med(readings.map((r) => r.h.pss)), total: 0 };
  pss.total = pss.daemon + pss.helpers;
  return { windowS: seconds, windowMonotonicUs, cpu, pss, helperProcesses: helpers.size, loadAverage: load };
}

/** Runs the kubelet with `pods` static pods on `peer` and measures it. The peer is left running (the caller tears it down). */
export async function measureNode(peer: Peer, o: NodeCostOptions, dir: string, say: (line: string) => void): Promise<NodeCostResult> {
  const result: NodeCostResult = { runtime: peer.name, description: peer.description, pods: o.pods, windowS: o.steadyS, loadAverage: '', errors: [] };
  const signal = () => ({ signal: AbortSignal.timeout(120_000) });
  // Pulled before the kubelet starts: the Ready time is about starting pods, not about one pull.
  await peer.images.pullImage({ image: { image: NGINX_IMAGE } }, signal());
  if (CONTAINERD_RELEASE[peer.name]) await peer.images.pullImage({ image: { image: KIT_PAUSE_IMAGE } }, signal());

  const nodeName = hostname().toLowerCase();
  const manifestDir = join(dir, 'manifests');
  const rootDir = join(dir, 'kroot');
  for (const d of [manifestDir, rootDir]) mkdirSync(d, { recursive: true });
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const configFile = join(dir, 'kubelet.yaml');
  writeFileSync(configFile, JSON.stringify(kubeletConfig(peer.socket, manifestDir, port), null, 2));
  const names = Array.from({ length: o.pods }, (_, i) => `cost-${i}`);
  const fullNames = names.map((n) => `${n}-${nodeName}`);

  say(`  ${peer.name}: waiting for the kubelet lock`);
  const lock = await takeKubeletLock(KUBELET_LOCK_WAIT_S);
  let kubelet: KubeletProcess | undefined;
  try {
    kubelet = spawnKubelet([`--config=${configFile}`, `--root-dir=${rootDir}`, '--v=1'], lock, join(dir, 'kubelet.log'));
    const pods = async (): Promise<KubePodLite[]> => {
      const res = await fetch(`${url}/pods`, { signal: AbortSignal.timeout(10_000) });
      if (!res.ok) throw new Error(`GET /pods: HTTP ${res.status}`);
      return ((await res.json()) as { items?: KubePodLite[] }).items ?? [];
    };
    const alive = () => kubelet!.child.exitCode === null && kubelet!.child.signalCode === null;
    for (const deadline = Date.now() + 90_000; ; ) {
      if (!alive()) throw new Error(`the kubelet exited at start:\n${kubelet.logs().slice(-3000)}`);
      if (
        await pods().then(
          () => true,
          () => false,
        )
      )
        break;
      if (Date.now() > deadline) throw new Error(`the kubelet did not serve /pods within 90 s:\n${kubelet.logs().slice(-3000)}`);
      await sleep(250);
    }

    // Every manifest appears at once (written aside, renamed in: the kubelet skips dot files).
    for (const name of names) writeFileSync(join(manifestDir, `.${name}.tmp`), JSON.stringify(podManifest(name)));
    const t0 = performance.now();
    for (const name of names) renameSync(join(manifestDir, `.${name}.tmp`), join(manifestDir, `${name}.yaml`));
    say(`  ${peer.name}: ${o.pods} pods written, waiting for all Ready`);
    const isReady = (p: KubePodLite) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
    let ready = 0;
    const wanted = new Set(fullNames);
    const allRunning = async (): Promise<boolean> => {
      const { containers } = await peer.runtime.listContainers(
        { filter: { state: { state: ContainerState.CONTAINER_RUNNING } } },
        { signal: AbortSignal.timeout(10_000) },
      );
      return new Set(containers.map((c) => c.labels['io.kubernetes.pod.name']).filter((n) => n !== undefined && wanted.has(n))).size === o.pods;
    };
    for (const deadline = Date.now() + o.readyTimeoutS * 1000; ; ) {
      if (!alive()) throw new Error(`the kubelet exited:\n${kubelet.logs().slice(-3000)}`);
      if (result.runningS === undefined && (await allRunning().catch(() => false))) result.runningS = (performance.now() - t0) / 1000;
      const list = await pods().catch(() => [] as KubePodLite[]);
      ready = list.filter((p) => fullNames.includes(p.metadata.name) && isReady(p)).length;
      if (ready === o.pods) {
        result.readyS = (performance.now() - t0) / 1000;
        break;
      }
      if (Date.now() > deadline) throw new Error(`only ${ready} of ${o.pods} pods Ready after ${o.readyTimeoutS} s`);
      await sleep(200);
    }
    say(
      `  ${peer.name}: all ${o.pods} running after ${result.runningS?.toFixed(1) ?? '-'} s, Ready after ${result.readyS!.toFixed(1)} s; settling ${o.settleS} s, then ${o.steadyS} s steady`,
    );
    await sleep(o.settleS * 1000);

    Object.assign(result, await measureSteadyWindow(peer, kubelet.child.pid!, o.steadyS));
    const list = await pods().catch(() => [] as KubePodLite[]);
    result.restarts = list.reduce((s, p) => s + (p.status?.containerStatuses ?? []).reduce((a, c) => a + (c.restartCount ?? 0), 0), 0);
    const notReady = o.pods - list.filter((p) => fullNames.includes(p.metadata.name) && isReady(p)).length;
    if (notReady > 0) result.errors.push(`${notReady} pods were not Ready at the end of the window`);
    if (cpuTicks(peer.daemonPid) === undefined) result.errors.push('the daemon exited during the window');
  } catch (err) {
    result.errors.push((err as Error).message);
  } finally {
    say(`  ${peer.name}: stopping the kubelet and removing the pods`);
    await kubelet?.stop().catch((err) => result.errors.push(`stopping the kubelet: ${(err as Error).message}`));
    await removeAllPods(peer.runtime, 60_000).catch((err) => result.errors.push(`removing pods: ${(err as Error).message}`));
    for (const d of podLogDirs('/var/log/pods', fullNames)) rmSync(d, { recursive: true, force: true });
    const busy = removeKubepodsCgroups();
    if (busy.length > 0) result.errors.push(`pod cgroups still in use after cleanup: ${busy.join(', ')}`);
    await removeTree(rootDir).catch(() => {});
    lock.release();
  }
  return result;
}
