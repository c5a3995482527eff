// What the processes of a cgroup (and of the cgroups below it) hold, from /proc: open file descriptors,
// sockets among them, their threads' scheduler states and the first process's soft limit on open
// files. cAdvisor reports these per container; the kernel keeps no per-cgroup total, so they are
// counted process by process. A container decides how many processes, threads and descriptors it has,
// and skiffd runs as root outside the container's CPU limit, so the work is bounded before it is done:
// each cgroup directory is counted at most once per CACHE_NS whoever asks (a pod's total reuses its
// containers'), sizes are checked from one read per process before any per-thread or per-descriptor
// work, and past a bound a count is left out rather than reported short.
import { readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { readText } from './files.ts';
import { cgroupLayout, controllerDir, type CgroupLayout } from './layout.ts';

/** Per cgroup directory: processes, threads and descriptor slots (FDSize) that are counted, at most. */
const MAX_PROCESSES = 1024;
const MAX_THREADS = 4096;
const MAX_DESCRIPTORS = 16_384;
/** A pod's containers are child cgroups of the pod's, and v2 keeps processes in leaves only. */
const MAX_DEPTH = 2;
const MAX_DIRECTORIES = 64;
/** How long one directory's counts serve every reader (cAdvisor's housekeeping interval is 10 s too). */
const CACHE_NS = 10_000_000_000n;

export interface ThreadStates {
  running: bigint;
  sleeping: bigint;
  stopped: bigint;
  uninterruptible: bigint;
}

export interface CgroupProcesses {
  /** Processes found (the cgroup's and its children's). */
  processes: bigint;
  /** Open file descriptors of all the processes; undefined past the bound. */
  fileDescriptors?: bigint;
  /** Those that are sockets; undefined past the bound. */
  sockets?: bigint;
  /** Threads by scheduler state (zombies are not counted); undefined past the bound. */
  threads?: ThreadStates;
  /** RLIMIT_NOFILE's soft value of the first process, undefined when unlimited or unknown. */
  maxOpenFilesSoft?: bigint;
}

/** The state letter of /proc/PID/stat (or a task's), after the command name, which may hold anything. */
export function statState(stat: string): string | undefined {
  const close = stat.lastIndexOf(')');
  return close < 0 ? undefined : stat.slice(close + 2, close + 3) || undefined;
}

/** Fields 20 (num_threads) and 22 (starttime) of /proc/PID/stat. */
function statFields(stat: string): { threads: number; start: string } | undefined {
  const close = stat.lastIndexOf(')');
  // After ") ": field 3 (state) is index 0, so field N is index N - 3.
  const f = close < 0 ? [] : stat.slice(close + 2).split(' ');
  const threads = Number(f[17]);
  return Number.isInteger(threads) && f[19] ? { threads, start: f[19] } : undefined;
}

/** "Max open files" soft value from /proc/PID/limits; undefined when unlimited. */
export function parseMaxOpenFiles(limits: string): bigint | undefined {
  const line = limits.split('\n').find((l) => l.startsWith('Max open files'));
  const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
  return soft && /^\d+$/.test(soft) ? BigInt(soft) : undefined;
}

const ok = <T>(p: Promise<T>) => p.catch(() => undefined);
/** /proc files read off the event loop: a container with thousands of threads must not stall the daemon. */
const procText = (path: string) => ok(readFile(path, 'utf8'));

interface Process {
  pid: number;
  start: string;
  threads: number;
  fdSlots: number;
}

/** The counts of one cgroup directory's own processes (not its children's). */
async function countDirectory(dir: string): Promise<CgroupProcesses | undefined> {
  const text = await ok(readText(join(dir, 'cgroup.procs')));
  if (text === undefined) return undefined;
  const pids = text
    .split('\n')
    .map(Number)
    .filter((pid) => Number.isInteger(pid) && pid > 0);
  if (pids.length > MAX_PROCESSES) return undefined;
  // One stat and one status per process first: how much there is to count, and who each process is.
  const procs: Process[] = [];
  for (const pid of pids) {
    const [stat, status] = await Promise.all([procText(`/proc/${pid}/stat`), procText(`/proc/${pid}/status`)]);
    const fields = stat && statFields(stat);
    const fdSlots = Number(/^FDSize:\s*(\d+)/m.exec(status ?? '')?.[1]);
    if (fields && Number.isInteger(fdSlots)) procs.push({ pid, start: fields.start, threads: fields.threads, fdSlots });
  }
  const out: CgroupProcesses = { processes: BigInt(procs.length) };
  const threadsKnown = procs.reduce((n, p) => n + p.threads, 0) <= MAX_THREADS;
  const fdsKnown = procs.reduce((n, p) => n + p.fdSlots, 0) <= MAX_DESCRIPTORS;
  const states: ThreadStates = { running: 0n, sleeping: 0n, stopped: 0n, uninterruptible: 0n };
  let fds = 0n;
  let sockets = 0n;
  let counted = 0;
  for (const p of procs) {
    const proc = `/proc/${p.pid}`;
    const mine: ThreadStates = { running: 0n, sleeping: 0n, stopped: 0n, uninterruptible: 0n };
    let myFds = 0n;
    let mySockets = 0n;
    if (fdsKnown) {
      const entries = (await ok(readdir(join(proc, 'fd')))) ?? [];
      myFds = BigInt(entries.length);
      for (const fd of entries) if ((await ok(readlink(join(proc, 'fd', fd))))?.startsWith('socket:')) mySockets++;
    }
    if (threadsKnown) {
      for (const tid of (await ok(readdir(join(proc, 'task')))) ?? []) {
        const state = statState((await procText(join(proc, 'task', tid, 'stat'))) ?? '');
        if (state === 'R') mine.running++;
        else if (state === 'S' || state === 'I') mine.sleeping++;
        else if (state === 'D') mine.uninterruptible++;
        else if (state === 'T' || state === 't') mine.stopped++;
      }
    }
    // A process that ended meanwhile, its pid perhaps taken by another, counts for nothing.
    const again = await procText(`${proc}/stat`);
    if (!again || statFields(again)?.start !== p.start) continue;
    counted++;
    fds += myFds;
    sockets += mySockets;
    for (const k of Object.keys(states) as (keyof ThreadStates)[]) states[k] += mine[k];
    if (out.maxOpenFilesSoft === undefined && counted === 1) {
      const limits = await procText(`${proc}/limits`);
      if (limits) out.maxOpenFilesSoft = parseMaxOpenFiles(limits);
    }
  }
  out.processes = BigInt(counted);
  if (fdsKnown) Object.assign(out, { fileDescriptors: fds, sockets });
  if (threadsKnown) out.threads = states;
  return out;
}

const cache = new Map<string, { at: bigint; counts: Promise<CgroupProcesses | undefined> }>();
let prunedAt = 0n;

/** One directory's counts, shared by every reader within CACHE_NS (and by concurrent ones). */
function directoryCounts(dir: string): Promise<CgroupProcesses | undefined> {
  const now = process.hrtime.bigint();
  if (now - prunedAt > CACHE_NS) {
    prunedAt = now;
    for (const [k, e] of cache) if (now - e.at > CACHE_NS) cache.delete(k);
  }
  const hit = cache.get(dir);
  if (hit && now - hit.at <= CACHE_NS) return hit.counts;
  const counts = countDirectory(dir);
  cache.set(dir, { at: now, counts });
  return counts;
}

/** Adds `b` into `a`; a count either side left out stays left out. */
function add(a: CgroupProcesses, b: CgroupProcesses): CgroupProcesses {
  const sum = (x?: bigint, y?: bigint) => (x === undefined || y === undefined ? undefined : x + y);
  return {
    processes: a.processes + b.processes,
    fileDescriptors: sum(a.fileDescriptors, b.fileDescriptors),
    sockets: sum(a.sockets, b.sockets),
    threads:
      a.threads && b.threads
        ? {
            running: a.threads.running + b.threads.running,
            sleeping: a.threads.sleeping + b.threads.sleeping,
            stopped: a.threads.stopped + b.threads.stopped,
            uninterruptible: a.threads.uninterruptible + b.threads.uninterruptible,
          }
        : undefined,
    maxOpenFilesSoft: a.processes > 0n ? a.maxOpenFilesSoft : b.maxOpenFilesSoft,
  };
}

/**
 * The counts of the cgroup and of the cgroups below it, down to MAX_DEPTH; undefined when the cgroup is
 * gone, or it holds more processes or child cgroups than are counted.
 */
export async function readCgroupProcesses(cgroupPath: string, layout: CgroupLayout = cgroupLayout()): Promise<CgroupProcesses | undefined> {
  // Every v1 hierarchy lists the same processes; any that has the cgroup will do.
  const top = controllerDir('pids', cgroupPath, layout) ?? controllerDir('memory', cgroupPath, layout) ?? controllerDir('cpuacct', cgroupPath, layout);
  if (!top) return undefined;
  const dirs: string[] = [];
  let level = [top];
  for (let depth = 0; depth <= MAX_DEPTH && level.length > 0; depth++) {
    dirs.push(...level);
    if (dirs.length > MAX_DIRECTORIES) return undefined;
    const next: string[] = [];
    for (const dir of level) {
      for (const e of (await ok(readdir(dir, { withFileTypes: true }))) ?? []) if (e.isDirectory()) next.push(join(dir, e.name));
      // Processes deeper down would go uncounted: the totals are unknown then, not short.
      if (dirs.length + next.length > MAX_DIRECTORIES || (depth === MAX_DEPTH && next.length > 0)) return undefined;
    }
    level = next;
  }
  let total: CgroupProcesses | undefined;
  for (const dir of dirs) {
    const counts = await directoryCounts(dir);
    if (counts === undefined) {
      if (dir === top) return undefined;
      // A child that went away meanwhile; one over the bounds leaves the totals unknown.
      if (await ok(readText(join(dir, 'cgroup.procs')))) return undefined;
      continue;
    }
    total = total ? add(total, counts) : counts;
  }
  return total;
}
