// `npm run bench:cri -- --cluster`: pod start-up through the API. One control plane (the kit's
// cluster.sh: etcd, kube-apiserver, controllers, scheduler) for the whole run; for each pod count,
// skiffd then containerd, each started fresh, becomes the node `localhost` under the kit's kubelet
// joined to it. A Deployment of N replicas (images already on the node) is created, and a watch on the
// API times each pod from its creation (ADDED) to all its containers running, as the watch sees it.
// Then the runtime's CPU and PSS over a steady window while the pods run, as in the kubelet part.
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { kitMissing } from '../../test/support/cri-conformance.ts';
import { startKitMirrors, startNodePeer } from './node-peers.ts';
import { joinKubelet, startControlPlane, type ControlPlane, type JoinedKubelet } from '../../test/support/cluster.ts';
import { removeKubepodsCgroups, takeKubeletLock } from '../../test/support/kubelet-host.ts';
import type { KubePod } from '../../test/support/kube-types.ts';
import type { BenchArgs } from './args.ts';
import { CONTAINERD_INSTALL_HINT, CONTAINERD2_HINT, containerdBinary } from './containerd-peer.ts';
import { KIT_PAUSE_IMAGE, KUBELET_LOCK_WAIT_S, measureSteadyWindow, NGINX_IMAGE, podManifest, type NodeCpu, type NodePss } from './kubelet-node.ts';
import { CONTAINERD_RELEASE, type Peer, type PeerName } from './peer.ts';
import { cpuTicks, snapshot, spent, ticksPerSecond } from './proc-cpu.ts';
import { listProcesses } from './host.ts';
import { removeAllPods } from './workload.ts';
import { table } from './stats.ts';

type Undo = { what: string; fn: () => Promise<void> };

export interface ClusterStartResult {
  runtime: PeerName;
  description: string;
  pods: number;
  /** Seconds from a pod's creation to all its containers running, as a watch on the API sees both. */
  startupS?: { p50: number; p90: number; p99: number; max: number };
  /** Seconds from the Deployment's creation to the last pod running. */
  lastS?: number;
  /**
   * Where a pod's start-up went, p50 and p99 over the pods, in seconds: from its creation (watch ADDED) to
   * the runtime creating its sandbox, from there to its container started (the runtime's own timestamps,
   * with the kubelet's calls between), and from there until the watch sees it running (the kubelet's
   * status report through the API).
   */
  phasesS?: { toSandbox: [number, number]; sandboxToStarted: [number, number]; startedToSeen: [number, number] };
  /**
   * CPU seconds spent from the Deployment's creation to the last pod running: by the runtime (its
   * daemon with what it ran and reaped, and every helper process it started for the new pods), the
   * kubelet, the control plane (etcd, API server, controllers, scheduler), and the whole machine.
   */
  startupCpuS?: { runtime: number; kubelet: number; controlPlane: number; machine: number };
  windowS: number;
  cpu?: NodeCpu;
  pss?: NodePss;
  helperProcesses?: number;
  loadAverage: string;
  errors: string[];
}

/** skiffd's p99 at or under the Kubernetes pod start-up SLO at 30 pods, and this ratio to containerd's at 100. */
export const CLUSTER_TARGETS = { sloS: 5, ratioAt100: 0.5 } as const;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];

function deployment(ns: string, replicas: number): Record<string, unknown> {
  const template = podManifest('x') as { spec: Record<string, unknown> };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'startup', namespace: ns },
    spec: {
      replicas,
      selector: { matchLabels: { app: 'startup' } },
      template: { metadata: { labels: { app: 'startup' } }, spec: template.spec },
    },
  };
}

const allRunning = (p: KubePod) => {
  const statuses = p.status.containerStatuses ?? [];
  return statuses.length === p.spec.containers.length && statuses.every((s) => s.state.running);
};

async function measureStartup(
  cp: ControlPlane,
  peer: Peer,
  kubelet: JoinedKubelet,
  o: { pods: number; ns: string; args: BenchArgs },
  say: (l: string) => void,
) {
  const result: ClusterStartResult = { runtime: peer.name, description: peer.description, pods: o.pods, windowS: 0, loadAverage: '', errors: [] };
  await cp.api.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: o.ns } });
  for (const deadline = Date.now() + 60_000; !(await cp.api.find(`/api/v1/namespaces/${o.ns}/serviceaccounts/default`)); ) {
    if (Date.now() > deadline) throw new Error(`no default service account in ${o.ns} within 60 s`);
    await sleep(200);
  }
  const added = new Map<string, number>();
  const started = new Map<string, number>();
  // The runtime stamps in wall-clock time: keep the wall clock of each watch event beside it.
  const wall = (at: number) => performance.timeOrigin + at;
  const abort = new AbortController();
  const watching = cp.api
    .watch<KubePod>(
      `/api/v1/namespaces/${o.ns}/pods`,
      (type, pod, at) => {
        const uid = pod.metadata.uid;
        if (type === 'ADDED' && !added.has(uid)) added.set(uid, at);
        if ((type === 'ADDED' || type === 'MODIFIED') && !started.has(uid) && allRunning(pod)) started.set(uid, at);
      },
      abort.signal,
    )
    .catch((err: Error) => result.errors.push(`watch: ${err.message}`));
  try {
    await sleep(500); // the watch is open before the first pod exists
    const cpPids = controlPlanePids(cp.dir);
    const kubeletPid = kubelet.process.child.pid!;
    const helpersBefore = new Set(peer.helperPids());
    // The daemon's own long-lived children (skiffd's helper shells) reap what they ran for the new pods.
    const daemonChildren = listProcesses()
      .filter((p) => p.ppid === peer.daemonPid && !helpersBefore.has(p.pid))
      .map((p) => p.pid);
    const procBefore = snapshot([peer.daemonPid, ...daemonChildren, kubeletPid, ...cpPids]);
    const machineBefore = machineBusyTicks();
    const t0 = performance.now();
    await cp.api.request('POST', `/apis/apps/v1/namespaces/${o.ns}/deployments`, deployment(o.ns, o.pods));
    const timeoutS = Math.max(180, o.pods * 4);
    for (const deadline = Date.now() + timeoutS * 1000; started.size < o.pods; ) {
      if (Date.now() > deadline) throw new Error(`only ${started.size} of ${o.pods} pods running after ${timeoutS} s`);
      await sleep(200);
    }
    const latencies = [...started].map(([uid, at]) => (at - (added.get(uid) ?? at)) / 1000).sort((a, b) => a - b);
    result.startupS = { p50: quantile(latencies, 0.5), p90: quantile(latencies, 0.9), p99: quantile(latencies, 0.99), max: latencies.at(-1)! };
    result.lastS = (Math.max(...started.values()) - t0) / 1000;
    const procAfter = snapshot([peer.daemonPid, ...daemonChildren, kubeletPid, ...cpPids]);
    const machineAfter = machineBusyTicks();
    const daemonChildrenBefore = new Set(daemonChildren);
    // Helpers started for the new pods, and daemon children that came with them (skiffd's extra helper shells).
    const newHelpers = [
      ...peer.helperPids(),
      ...listProcesses()
        .filter((p) => p.ppid === peer.daemonPid)
        .map((p) => p.pid),
    ].filter((pid, i, all) => !helpersBefore.has(pid) && !daemonChildrenBefore.has(pid) && all.indexOf(pid) === i);
    const helperTicks = newHelpers.reduce((sum, pid) => {
      const t = cpuTicks(pid);
      return sum + (t ? t.self + t.reaped : 0);
    }, 0);
    const both = (x: { self: number; reaped: number }) => x.self + x.reaped;
    const hz = ticksPerSecond();
    result.startupCpuS = {
      runtime: (both(spent(procBefore, procAfter, [peer.daemonPid, ...daemonChildren])) + helperTicks) / hz,
      kubelet: both(spent(procBefore, procAfter, [kubeletPid])) / hz,
      controlPlane: both(spent(procBefore, procAfter, cpPids)) / hz,
      machine: (machineAfter - machineBefore) / hz,
    };
    result.phasesS = await startupPhases(peer, added, started, wall);
    say(
      `  ${peer.name}: ${o.pods} pods running; start-up p50 ${result.startupS.p50.toFixed(2)} s, p99 ${result.startupS.p99.toFixed(2)} s, ` +
        `last after ${result.lastS.toFixed(1)} s; settling ${o.args.settleS} s, then ${o.args.steadyS} s steady`,
    );
  } finally {
    abort.abort();
    await watching;
  }
  await sleep(o.args.settleS * 1000);
  Object.assign(result, await measureSteadyWindow(peer, kubelet.process.child.pid!, o.args.steadyS));
  return result;
}

/** Busy ticks of all CPUs (everything but idle and iowait), from /proc/stat. */
function machineBusyTicks(): number {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal
  return f[0] + f[1] + f[2] + f[5] + f[6] + f[7];
}

/** The pids cluster.sh wrote for etcd and the control plane's components. */
function controlPlanePids(dir: string): number[] {
  return ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler']
    .map((name) => {
      try {
        return Number(readFileSync(`${dir}/${name}.pid`, 'utf8').trim());
      } catch {
        return 0;
      }
    })
    .filter((pid) => pid > 0);
}

/** Splits each pod's start-up at the runtime's sandbox creation and container start (see ClusterStartResult.phasesS). */
async function startupPhases(peer: Peer, added: Map<string, number>, seen: Map<string, number>, wall: (at: number) => number) {
  const { items } = await peer.runtime.listPodSandbox({});
  const { containers } = await peer.runtime.listContainers({});
  const phases: { toSandbox: number[]; sandboxToStarted: number[]; startedToSeen: number[] } = { toSandbox: [], sandboxToStarted: [], startedToSeen: [] };
  for (const [uid, seenAt] of seen) {
    const sandbox = items.find((x) => x.labels['io.kubernetes.pod.uid'] === uid);
    const container = containers.find((x) => x.labels['io.kubernetes.pod.uid'] === uid);
    if (!sandbox || !container) continue;
    const status = await peer.runtime.containerStatus({ containerId: container.id });
    const sandboxMs = Number(sandbox.createdAt / 1_000_000n);
    const startedMs = Number((status.status?.startedAt ?? 0n) / 1_000_000n);
    phases.toSandbox.push((sandboxMs - wall(added.get(uid)!)) / 1000);
    phases.sandboxToStarted.push((startedMs - sandboxMs) / 1000);
    phases.startedToSeen.push((wall(seenAt) - startedMs) / 1000);
  }
  const pq = (v: number[]): [number, number] => {
    const sorted = [...v].sort((a, b) => a - b);
    return [quantile(sorted, 0.5), quantile(sorted, 0.99)];
  };
  return { toSandbox: pq(phases.toSandbox), sandboxToStarted: pq(phases.sandboxToStarted), startedToSeen: pq(phases.startedToSeen) };
}

export async function runClusterPart(
  args: BenchArgs,
  dir: string,
  undo: Undo[],
  say: (line: string) => void,
  stopping: () => boolean,
): Promise<{ results: ClusterStartResult[]; text: string }> {
  const missing = kitMissing();
  if (missing) throw new Error(missing);
  // Beside containerd 2.1 (--only containerd runs 1.6 alone).
  const wanted: PeerName[] = args.only ? [args.only] : ['skiffd', 'containerd2'];
  for (const name of wanted) {
    const release = CONTAINERD_RELEASE[name];
    if (release && !containerdBinary(release))
      throw new Error(`containerd ${release} is not available (${release === '1.6' ? CONTAINERD_INSTALL_HINT : CONTAINERD2_HINT})`);
  }

  say("starting the conformance kit's registry and control plane");
  const kit = await startKitMirrors(undo);
  const cp = await startControlPlane(join(dir, 'control-plane'));
  undo.push({ what: 'stopping the control plane', fn: () => cp.stop() });

  const results: ClusterStartResult[] = [];
  for (const pods of args.kubeletPods) {
    for (const name of wanted) {
      if (stopping()) break;
      const peerDir = join(dir, `${name}-${pods}`);
      mkdirSync(peerDir, { recursive: true });
      say(`cluster, ${pods} pods: starting ${name}`);
      let peer: Peer | undefined;
      const ns = `startup-${name}-${pods}`;
      try {
        peer = await startNodePeer(name, peerDir, kit, args);
        const p = peer;
        const step = { what: `tearing down ${name}`, fn: () => p.teardown() };
        undo.push(step);
        // Images are on the node before the clock starts: start-up, not one pull, is measured.
        const signal = () => ({ signal: AbortSignal.timeout(120_000) });
        await peer.images.pullImage({ image: { image: NGINX_IMAGE } }, signal());
        if (CONTAINERD_RELEASE[peer.name]) await peer.images.pullImage({ image: { image: KIT_PAUSE_IMAGE } }, signal());
        const lock = await takeKubeletLock(KUBELET_LOCK_WAIT_S);
        let kubelet: JoinedKubelet | undefined;
        try {
          kubelet = await joinKubelet(cp, lock, {
            nodeName: 'localhost',
            address: '127.0.0.1',
            socket: peer.socket,
            dir: join(peerDir, 'node'),
            config: { maxPods: 250 },
          });
          // Pods land on a node that has been up a while, as in a running cluster: not on a kubelet
          // still doing its first syncs, image and volume scans.
          say(`  ${name}: node Ready; settling ${args.settleS} s before the Deployment`);
          await sleep(args.settleS * 1000);
          results.push(await measureStartup(cp, peer, kubelet, { pods, ns, args }, say));
        } finally {
          say(`  ${name}: stopping the kubelet, removing the pods and the node`);
          await kubelet?.stop().catch(() => {});
          // The node is gone: the API forgets its pods at once rather than waiting for a kubelet.
          await cp.kubectl(['delete', 'pods', '--all', '-n', ns, '--force', '--grace-period=0'], { timeoutMs: 120_000 }).catch(() => {});
          await cp.kubectl(['delete', 'namespace', ns, '--wait=false']).catch(() => {});
          await cp.kubectl(['delete', 'node', 'localhost', '--wait=false']).catch(() => {});
          await removeAllPods(peer.runtime, 60_000).catch(() => {});
          removeKubepodsCgroups();
          lock.release();
        }
        await peer.teardown();
        undo.splice(undo.indexOf(step), 1);
      } catch (err) {
        say(`  ${name} failed: ${(err as Error).message}`);
        results.push({ runtime: name, description: peer?.description ?? 'did not start', pods, windowS: 0, loadAverage: '', errors: [(err as Error).message] });
        await peer?.teardown().catch(() => {});
      }
    }
  }
  return { results, text: formatClusterStartup(results) };
}

const sec = (s: number | undefined) => (s === undefined ? '-' : `${s.toFixed(2)} s`);
const pct = (v: number | undefined) => (v === undefined ? '-' : `${v.toFixed(1)} %`);
const mbs = (kb: number | undefined) => (kb === undefined ? '-' : `${(kb / 1024).toFixed(0)} MB`);

export function formatClusterStartup(results: ClusterStartResult[]): string {
  const out: string[] = [];
  for (const pods of [...new Set(results.map((r) => r.pods))]) {
    const s = results.find((r) => r.pods === pods && r.runtime === 'skiffd');
    const c = results.find((r) => r.pods === pods && r.runtime === 'containerd2') ?? results.find((r) => r.pods === pods && r.runtime === 'containerd');
    const rows: string[][] = [];
    const row = (
      what: string,
      get: (r: ClusterStartResult) => number | undefined,
      fmt: (v: number | undefined) => string,
      target = '-',
      met?: (a: number, r?: number) => boolean,
    ) => {
      const a = s && get(s);
      const b = c && get(c);
      const ratio = a !== undefined && b !== undefined && b > 0 ? a / b : undefined;
      rows.push([what, fmt(a), fmt(b), ratio === undefined ? '-' : ratio.toFixed(2), target, !met || a === undefined ? '-' : met(a, ratio) ? 'yes' : 'no']);
    };
    row('pod start-up p50', (r) => r.startupS?.p50, sec);
    row('pod start-up p90', (r) => r.startupS?.p90, sec);
    if (pods <= 30)
      row(
        'pod start-up p99',
        (r) => r.startupS?.p99,
        sec,
        `<= ${CLUSTER_TARGETS.sloS} s`,
        (a) => a <= CLUSTER_TARGETS.sloS,
      );
    else
      row(
        'pod start-up p99',
        (r) => r.startupS?.p99,
        sec,
        `ratio <= ${CLUSTER_TARGETS.ratioAt100}`,
        (_a, ratio) => ratio !== undefined && ratio <= CLUSTER_TARGETS.ratioAt100,
      );
    row('last pod running after the Deployment', (r) => r.lastS, sec);
    row('  creation to sandbox created, p50', (r) => r.phasesS?.toSandbox[0], sec);
    row('  creation to sandbox created, p99', (r) => r.phasesS?.toSandbox[1], sec);
    row('  sandbox created to container started, p50', (r) => r.phasesS?.sandboxToStarted[0], sec);
    row('  sandbox created to container started, p99', (r) => r.phasesS?.sandboxToStarted[1], sec);
    row('  container started to running in the API, p50', (r) => r.phasesS?.startedToSeen[0], sec);
    row('  container started to running in the API, p99', (r) => r.phasesS?.startedToSeen[1], sec);
    const cpuS = (v: number | undefined) => (v === undefined ? '-' : `${v.toFixed(1)} s`);
    row('CPU during start-up: the runtime', (r) => r.startupCpuS?.runtime, cpuS);
    row('CPU during start-up: the kubelet', (r) => r.startupCpuS?.kubelet, cpuS);
    row('CPU during start-up: the control plane', (r) => r.startupCpuS?.controlPlane, cpuS);
    row('CPU during start-up: the whole machine', (r) => r.startupCpuS?.machine, cpuS);
    row('runtime CPU, daemon', (r) => r.cpu?.daemon, pct);
    row('runtime CPU, helpers', (r) => r.cpu?.helpers, pct);
    row('runtime CPU, total', (r) => r.cpu?.total, pct);
    row('PSS, daemon', (r) => r.pss?.daemon, mbs);
    row('PSS, helpers', (r) => r.pss?.helpers, mbs);
    row('PSS, total', (r) => r.pss?.total, mbs);
    row('kubelet CPU (reference)', (r) => r.cpu?.kubelet, pct);
    out.push(`${pods} pods through the API (a Deployment; start-up from creation to all containers running, as a watch sees it)`);
    out.push(table(['', 'skiffd', c?.runtime === 'containerd' ? 'containerd 1.6' : 'containerd 2.1', 'ratio', 'target', 'met'], rows));
    for (const r of [s, c]) {
      if (!r) continue;
      out.push(
        `  ${r.runtime}: ${r.description}; ${r.helperProcesses ?? '?'} helper processes; window ${r.windowS.toFixed(0)} s; load average ${r.loadAverage || '?'}`,
      );
      for (const e of r.errors) out.push(`  ${r.runtime} error: ${e}`);
    }
    out.push('');
  }
  return out.join('\n');
}
