// What kubelet tests read from the host and the runtime about a pod's containers: the runtime's id and
// verbose status (pid, cgroups path, rootfs), cgroup files found through /proc/PID/cgroup, namespaces.
import { readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { controllerDir } from '../../node/skiffd/cgroups/layout.ts';
import type { RuntimeClient } from './skiffd.ts';
import { containerStatus, type KubePod } from './kube-types.ts';

/** A node whose runtime a test reads directly: a standalone kubelet's or a cluster's. */
export interface RuntimeNode {
  readonly runtime: RuntimeClient;
}

/** The runtime's id of a container the kubelet reports (containerID is `skiffd://ID`). */
export function runtimeId(pod: KubePod, container: string): string {
  const id = containerStatus(pod, container)?.containerID;
  if (!id) throw new Error(`${pod.metadata.name}/${container} has no container id yet`);
  return id.replace(/^[a-z]+:\/\//, '');
}

export interface ContainerInfo {
  pid: number;
  cgroupsPath: string;
  rootfs: string;
  bundle: string;
  sandboxID: string;
}

/** ContainerStatus(verbose) info of a container. */
export async function containerInfo(node: RuntimeNode, id: string): Promise<ContainerInfo> {
  const res = await node.runtime.containerStatus({ containerId: id, verbose: true });
  return JSON.parse(res.info.info) as ContainerInfo;
}

export interface SandboxInfo {
  pid: number;
  cgroupParent: string;
  namespaces: { net?: string; ipc?: string; uts?: string; pid?: string };
}

/** The pod sandbox the runtime holds for a kubelet pod (by its UID label), with its verbose info. */
export async function sandboxOf(node: RuntimeNode, uid: string): Promise<{ id: string; ip: string; info: SandboxInfo } | undefined> {
  const { items } = await node.runtime.listPodSandbox({ filter: { id: '', state: undefined, labelSelector: { 'io.kubernetes.pod.uid': uid } } });
  const ready = items.find((s) => s.state === 0) ?? items[0];
  if (!ready) return undefined;
  const res = await node.runtime.podSandboxStatus({ podSandboxId: ready.id, verbose: true });
  return { id: ready.id, ip: res.status?.network?.ip ?? '', info: JSON.parse(res.info.info) as SandboxInfo };
}

/** Runs a command in a container through the runtime (the kubelet's own exec path), returns stdout; fails on a non-zero exit. */
export async function execIn(node: RuntimeNode, pod: KubePod, container: string, cmd: string[]): Promise<string> {
  const res = await node.runtime.execSync({ containerId: runtimeId(pod, container), cmd, timeout: 10n });
  if (res.exitCode !== 0) throw new Error(`${cmd.join(' ')} in ${container}: exit ${res.exitCode}: ${res.stderr.toString()}`);
  return res.stdout.toString();
}

/** The cgroup path of a process for a v1 controller (or the unified path), from /proc/PID/cgroup. */
export function processCgroup(pid: number, controller: string): string {
  for (const line of readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n')) {
    const [, controllers, path] = line.split(':');
    if (controllers === undefined || path === undefined) continue;
    if (controllers.split(',').includes(controller)) return path;
  }
  throw new Error(`process ${pid} is in no ${controller} cgroup`);
}

/** A cgroup file's content (trimmed), by host cgroup path. */
export function cgroupValue(controller: string, cgroupPath: string, file: string): string {
  const dir = controllerDir(controller, cgroupPath);
  if (!dir) throw new Error(`this host has no ${controller} controller`);
  return readFileSync(join(dir, file), 'utf8').trim();
}

/** The namespace a process is in (e.g. `net:[4026531992]`). */
export function namespaceOf(pid: number | 'self', kind: string): string {
  return readlinkSync(`/proc/${pid}/ns/${kind}`);
}
