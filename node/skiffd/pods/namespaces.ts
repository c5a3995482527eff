// A pod's net, ipc and uts namespaces outlive any process: util-linux unshare bind-mounts each new
// namespace onto a file (as CRI-O's pinns does), and containers join them by path. The same exec that
// creates them sets the hostname (a shell builtin) and, when asked, brings loopback up and mounts the
// shm tmpfs (the last step is exec'd, not forked): every extra process costs the RPC a few ms.
import { readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { execChecked } from '../util/command.ts';
import { unmountOrDetach } from '../util/mount-calls.ts';

export type PinnableNamespace = 'net' | 'ipc' | 'uts';

export interface PinRequest {
  net: boolean;
  ipc: boolean;
  uts: boolean;
  /** Written inside the new uts namespace. */
  hostname: string;
  /** Bring `lo` up here; not needed when the pod's CNI chain runs the loopback plugin. */
  loopbackUp?: boolean;
  /** Where to mount the pod's shared /dev/shm tmpfs (pods with their own IPC namespace). */
  shm?: string;
}

const TIMEOUT_MS = 10_000;

function unescapeMountPath(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(Number.parseInt(oct, 8)));
}

/** Every mount point on the host, with its filesystem type and source root (`net:[4026532179]` for nsfs). */
export async function mountPoints(): Promise<Map<string, { fstype: string; root: string }>> {
  const out = new Map<string, { fstype: string; root: string }>();
  const text = await readFile('/proc/self/mountinfo', 'utf8');
  for (const line of text.split('\n')) {
    const dash = line.indexOf(' - ');
    if (dash < 0) continue;
    const fields = line.slice(0, dash).split(' ');
    out.set(unescapeMountPath(fields[4]), { fstype: line.slice(dash + 3).split(' ')[0], root: fields[3] });
  }
  return out;
}

/** Mount points of namespace (nsfs) bind mounts, mapped to the namespace they hold. */
export async function nsfsMounts(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const [path, m] of await mountPoints()) if (m.fstype === 'nsfs') out.set(path, m.root);
  return out;
}

/** Creates the requested namespaces pinned at `dir/{net,ipc,uts}`; returns their paths. */
export async function pinNamespaces(dir: string, request: PinRequest): Promise<Partial<Record<PinnableNamespace, string>>> {
  const kinds = (['net', 'ipc', 'uts'] as const).filter((k) => request[k]);
  if (kinds.length === 0 && !request.shm) return {};
  await mkdir(dir, { recursive: true });
  const paths: Partial<Record<PinnableNamespace, string>> = {};
  for (const kind of kinds) {
    paths[kind] = join(dir, kind);
    await writeFile(paths[kind]!, '');
  }
  if (request.shm) await mkdir(request.shm, { recursive: true });
  const steps: string[] = ['set -e'];
  if (request.uts) steps.push(`printf '%s' "$1" > /proc/sys/kernel/hostname`);
  if (request.net && (request.loopbackUp ?? true)) steps.push('ip link set lo up');
  // Without a mount namespace of its own, this mounts in the host's, where containers find it.
  if (request.shm) steps.push(`exec mount -t tmpfs -o nosuid,nodev,noexec,mode=1777,size=65536k shm "$2"`);
  const args = kinds.map((k) => `--${k}=${paths[k]}`);
  await execChecked('unshare', [...args, '--', '/bin/sh', '-c', steps.join('; '), 'skiff-pin', request.hostname, request.shm ?? ''], { timeoutMs: TIMEOUT_MS });
  return paths;
}

/**
 * Unmounts and deletes pinned namespace files (and the pod's shm mount). Safe to repeat and on half-made
 * pins. A namespace stays alive while a process still uses it; this only drops skiffd's reference.
 */
export async function unpinNamespaces(paths: string[]): Promise<void> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const mounted = await mountPoints();
    const busy = paths.filter((p) => mounted.has(p));
    if (busy.length === 0) break;
    for (const p of busy) await unmountOrDetach(p);
  }
  const still = await mountPoints();
  const stuck = paths.filter((p) => still.has(p));
  if (stuck.length > 0) throw new Error(`cannot unmount ${stuck.join(', ')}`);
  for (const p of paths) await rm(p, { force: true, recursive: true });
}

/** Sets sysctls inside the pod's namespaces (after CNI, so per-interface keys such as net.ipv4.conf.eth0.* exist). */
export async function applySysctls(namespaces: { net?: string; ipc?: string }, sysctls: [string, string][]): Promise<void> {
  if (sysctls.length === 0) return;
  const enter: string[] = [];
  if (namespaces.net) enter.push(`--net=${namespaces.net}`);
  if (namespaces.ipc) enter.push(`--ipc=${namespaces.ipc}`);
  // Each value is written through /proc/sys by a shell inside the namespaces; /proc/sys/net follows the
  // network namespace of the process that opens it.
  const script = 'while [ $# -gt 0 ]; do printf "%s" "$2" > "/proc/sys/$1" || { echo "sysctl $1 could not be set" >&2; exit 1; }; shift 2; done';
  const args = sysctls.flatMap(([key, value]) => [sysctlPath(key), value]);
  await execChecked('nsenter', [...enter, '--', '/bin/sh', '-c', script, 'skiff-sysctl', ...args], { timeoutMs: TIMEOUT_MS });
}

/** `net.ipv4.ip_forward` -> `net/ipv4/ip_forward`; keys already written with slashes stay as they are. */
export function sysctlPath(key: string): string {
  return key.includes('/') ? key.replace(/^\/+/, '') : key.split('.').join('/');
}
