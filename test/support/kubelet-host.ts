// The host side of a kubelet test node: the lock that keeps two kubelets off this machine, the kubelet
// process itself, and the sweeps of what a kubelet leaves on the host (pod cgroups, pod log folders,
// mounts under its root dir).
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, createWriteStream, existsSync, openSync, readdirSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { runCommand } from './commands.ts';
import { kitDir } from './cri-conformance.ts';
import type { RuntimeClient } from './skiffd.ts';
import { allCgroupDirs } from '../../node/skiffd/cgroups/layout.ts';

/**
 * The KubeletConfiguration of a standalone test node: static pods from `manifestDir`, the runtime on
 * `socket`, the read-only API on 127.0.0.1:`readOnlyPort` without auth, cgroupfs on this host's cgroup
 * v1, and no eviction or image GC on a busy shared disk unless a caller sets its own thresholds.
 */
export function standaloneKubeletConfig(socket: string, manifestDir: string, readOnlyPort: number): Record<string, unknown> {
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    staticPodPath: manifestDir,
    fileCheckFrequency: '2s',
    containerRuntimeEndpoint: `unix://${socket}`,
    imageServiceEndpoint: `unix://${socket}`,
    cgroupDriver: 'cgroupfs',
    failSwapOn: false,
    failCgroupV1: false,
    address: '127.0.0.1',
    readOnlyPort,
    healthzPort: 0,
    authentication: { anonymous: { enabled: true }, webhook: { enabled: false } },
    authorization: { mode: 'AlwaysAllow' },
    enforceNodeAllocatable: [],
    evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%', 'nodefs.inodesFree': '1%' },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    serializeImagePulls: false,
  };
}

/** Every kubelet on this host, by hand or from a test, holds this lock: two kubelets destroy each other's pods. */
export const KUBELET_LOCK = '/run/skiff-kubelet.lock';

export interface HostLock {
  /** The open lock file: handed to each kubelet as fd 3, so an orphaned kubelet still holds the lock. */
  fd: number;
  release(): void;
}

/**
 * Takes the kubelet lock with `flock -w SECONDS` on a descriptor this process keeps open, so the lock
 * stays held across kubelet restarts and is released when this process (and every kubelet it started)
 * is gone, even after a crash.
 */
export async function takeKubeletLock(waitSeconds = 1500): Promise<HostLock> {
  const fd = openSync(KUBELET_LOCK, 'a');
  const started = Date.now();
  const notice = setTimeout(() => console.log(`# waiting for ${KUBELET_LOCK} (another kubelet runs on this host)...`), 3_000);
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn('flock', ['-w', String(waitSeconds), '3'], { stdio: ['ignore', 'ignore', 'inherit', fd] });
    child.on('error', () => resolve(-1));
    child.on('exit', (c) => resolve(c));
  });
  clearTimeout(notice);
  if (code !== 0) {
    closeSync(fd);
    throw new Error(`could not take ${KUBELET_LOCK} within ${waitSeconds} s (flock exit ${code}); another kubelet holds it`);
  }
  if (Date.now() - started > 3_000) console.log(`# took ${KUBELET_LOCK} after ${Math.round((Date.now() - started) / 1000)} s`);
  let released = false;
  return {
    fd,
    release() {
      if (released) return;
      released = true;
      closeSync(fd);
    },
  };
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

export interface KubeletProcess {
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The last part of what it logged. */
  logs(): string;
  /** SIGTERM, bounded wait, SIGKILL after. */
  stop(timeoutMs?: number): Promise<void>;
}

/** The Kubernetes releases the kit carries: 1.36 (current, what the suites run) and 1.32 (a version-skew check). */
export type KubeVersion = '1.32' | '1.36';
export const CURRENT_KUBE: KubeVersion = '1.36';

/** The kit's Kubernetes in one binary: `kube-VERSION kubelet|kube-apiserver|kube-controller-manager|kube-scheduler`. */
export const kubeBinary = (version: KubeVersion = CURRENT_KUBE) => join(kitDir, 'bin', `kube-${version}`);
export const kubeBin = kubeBinary();

/**
 * Starts the kit's kubelet (`kube-VERSION kubelet ARGS`) holding the lock's descriptor; its log goes to
 * memory (tail) and to logFile. With `--kubeconfig` it joins an API server, without it runs standalone.
 */
export function spawnKubelet(args: string[], lock: HostLock, logFile: string, version: KubeVersion = CURRENT_KUBE): KubeletProcess {
  const bin = kubeBinary(version);
  const child = spawn(bin, ['kubelet', ...args], { stdio: ['ignore', 'pipe', 'pipe', lock.fd] });
  live.add(child);
  const file = createWriteStream(logFile, { flags: 'a' });
  let tail = '';
  const take = (d: Buffer) => {
    file.write(d);
    tail += d.toString('utf8');
    if (tail.length > 1 << 20) tail = tail.slice(-(512 << 10));
  };
  child.stdout!.on('data', take);
  child.stderr!.on('data', take);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('error', (err) => {
      live.delete(child);
      tail += `\n[harness] cannot run ${bin}: ${err.message}\n`;
      resolve({ code: -1, signal: null });
    });
    child.once('exit', (code, signal) => {
      live.delete(child);
      setImmediate(() => {
        file.end();
        resolve({ code, signal });
      });
    });
  });
  return {
    child,
    exited,
    logs: () => tail,
    async stop(timeoutMs = 30_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((r) => (timer = setTimeout(r, timeoutMs, 'late')));
      const result = await Promise.race([exited, late]);
      clearTimeout(timer);
      if (result === 'late') {
        child.kill('SIGKILL');
        await exited;
        throw new Error(`the kubelet did not stop within ${timeoutMs} ms of SIGTERM; killed it`);
      }
    },
  };
}

/** The cgroup directories of the kubelet's pod hierarchy (/kubepods) in every controller this host mounts. */
export function kubepodsDirs(): string[] {
  return allCgroupDirs('/kubepods').filter((d) => existsSync(d));
}

/** Pod cgroups (pod<UID>) under /kubepods in any hierarchy, as UIDs. */
export function podCgroupUids(): Set<string> {
  const uids = new Set<string>();
  const walk = (dir: string, depth: number) => {
    let names: string[] = [];
    try {
      names = readdirSync(dir, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch {
      return;
    }
    for (const name of names) {
      if (name.startsWith('pod')) uids.add(name.slice(3));
      else if (depth < 1) walk(join(dir, name), depth + 1);
    }
  };
  for (const d of kubepodsDirs()) walk(d, 0);
  return uids;
}

/**
 * Removes the kubelet's cgroup tree (/kubepods and below) where it is empty, deepest first. A cgroup that
 * still has a process is left and reported: that is a leftover.
 */
export function removeKubepodsCgroups(): string[] {
  return kubepodsDirs().flatMap((d) => removeCgroupTree(d));
}

/** Removes a cgroup directory and every one below it, deepest first; returns those still in use. */
export function removeCgroupTree(dir: string): string[] {
  const busy: string[] = [];
  const remove = (d: string) => {
    let children: string[] = [];
    try {
      children = readdirSync(d, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => join(d, e.name));
    } catch {
      return;
    }
    for (const c of children) remove(c);
    try {
      rmdirSync(d);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') busy.push(`${d} (${code})`);
    }
  };
  remove(dir);
  return busy;
}

/** Every pod sandbox the runtime has, stopped and removed (their containers with them). */
export async function removeAllPods(runtime: RuntimeClient): Promise<void> {
  const { containers } = await runtime.listContainers({});
  for (const c of containers) await runtime.removeContainer({ containerId: c.id }).catch(() => {});
  const { items } = await runtime.listPodSandbox({});
  for (const p of items) {
    await runtime.stopPodSandbox({ podSandboxId: p.id });
    await runtime.removePodSandbox({ podSandboxId: p.id });
  }
}

/** Mount points at or under `dir`, deepest first. */
export function mountsUnder(dir: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((m): m is string => !!m && (m === dir || m.startsWith(`${dir}/`)))
    .sort((a, b) => b.length - a.length);
}

/** Unmounts everything under `dir` (emptyDir tmpfs and the like), then removes it. */
export async function removeTree(dir: string): Promise<void> {
  for (const m of mountsUnder(dir)) await runCommand('umount', ['-l', m], { timeoutMs: 10_000 });
  rmSync(dir, { recursive: true, force: true });
}

/** The kubelet's log folders of the pods named (full static pod names), in /var/log/pods. */
export function podLogDirs(podLogsDir: string, fullNames: Iterable<string>): string[] {
  const prefixes = [...fullNames].map((n) => `default_${n}_`);
  let names: string[] = [];
  try {
    names = readdirSync(podLogsDir);
  } catch {
    return [];
  }
  return names.filter((n) => prefixes.some((p) => n.startsWith(p))).map((n) => join(podLogsDir, n));
}
