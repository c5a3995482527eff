// What a kubelet pod occupies on the host, taken while it runs, and what of it is still there after the
// pod was deleted: runtime records, processes, mounts, cgroups, the network namespace, the IP address.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { allCgroupDirs, cgroupfsPath } from '../../node/skiffd/cgroups/layout.ts';
import type { TestNetwork } from './netns.ts';
import type { KubePod } from './kube-types.ts';
import { containerInfo, runtimeId, sandboxOf, type RuntimeNode } from './kube-host-reads.ts';

/** A node with the runtime's client and the CNI network its pods are on. */
export type NetworkedNode = RuntimeNode & { readonly network: Pick<TestNetwork, 'ipamDir' | 'name'> };

export interface DeletionSnapshot {
  uid: string;
  sandboxId: string;
  netns: string;
  ip: string;
  containerIds: string[];
  /** pid -> its command line then, so a reused pid is not mistaken for a leftover. */
  processes: Map<number, string>;
  cgroupDirs: string[];
}

function cmdline(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return undefined;
  }
}

export async function deletionSnapshot(node: NetworkedNode, pod: KubePod, containers: string[]): Promise<DeletionSnapshot> {
  const uid = pod.metadata.uid;
  const sandbox = await sandboxOf(node, uid);
  if (!sandbox) throw new Error(`the runtime has no sandbox for pod ${pod.metadata.name}`);
  const containerIds = containers.map((c) => runtimeId(pod, c));
  const processes = new Map<number, string>();
  for (const id of containerIds) {
    const { pid } = await containerInfo(node, id);
    processes.set(pid, cmdline(pid) ?? '');
  }
  if (sandbox.info.pid > 0) processes.set(sandbox.info.pid, cmdline(sandbox.info.pid) ?? '');
  const cgroupDirs = podCgroupPaths(pod)
    .flatMap((path) => allCgroupDirs(path))
    .filter((d) => existsSync(d));
  if (cgroupDirs.length === 0) throw new Error(`no pod cgroup found for ${pod.metadata.name}`);
  if (!sandbox.info.namespaces.net || !sandbox.ip) throw new Error(`pod ${pod.metadata.name} has no network namespace or IP`);
  return { uid, sandboxId: sandbox.id, netns: sandbox.info.namespaces.net, ip: sandbox.ip, containerIds, processes, cgroupDirs };
}

/** Where the kubelet puts a pod's cgroup under either driver: cgroupfs names, then systemd's slices. */
function podCgroupPaths(pod: KubePod): string[] {
  const qos = pod.status.qosClass === 'Guaranteed' ? '' : pod.status.qosClass?.toLowerCase();
  const uid = pod.metadata.uid;
  const slice = `kubepods${qos ? `-${qos}` : ''}-pod${uid.replaceAll('-', '_')}.slice`;
  return [`/kubepods${qos ? `/${qos}` : ''}/pod${uid}`, cgroupfsPath(slice)];
}

/** Everything of the snapshot still present, described; empty when the pod left nothing. */
export async function leftoversOf(node: NetworkedNode, s: DeletionSnapshot): Promise<string[]> {
  const left: string[] = [];
  const { items } = await node.runtime.listPodSandbox({ filter: { id: '', state: undefined, labelSelector: { 'io.kubernetes.pod.uid': s.uid } } });
  for (const sb of items) left.push(`sandbox ${sb.id.slice(0, 12)} (state ${sb.state}) in the runtime`);
  const { containers } = await node.runtime.listContainers({
    filter: { id: '', state: undefined, podSandboxId: '', labelSelector: { 'io.kubernetes.pod.uid': s.uid } },
  });
  for (const c of containers) left.push(`container ${c.id.slice(0, 12)} (state ${c.state}) in the runtime`);
  for (const [pid, cmd] of s.processes) {
    const now = cmdline(pid);
    if (now !== undefined && now === cmd) left.push(`process ${pid} (${cmd.split('\0').join(' ').trim()})`);
  }
  const ids = [s.sandboxId, ...s.containerIds, s.uid];
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const mountPoint = line.split(' ')[4];
    if (mountPoint && (ids.some((id) => line.includes(id)) || mountPoint === s.netns)) left.push(`mount ${mountPoint}`);
  }
  for (const d of s.cgroupDirs) if (existsSync(d)) left.push(`cgroup ${d}`);
  if (existsSync(s.netns)) left.push(`network namespace file ${s.netns}`);
  const lease = join(node.network.ipamDir, node.network.name, s.ip);
  if (existsSync(lease)) left.push(`IP address ${s.ip} still allocated (${lease})`);
  return left;
}
