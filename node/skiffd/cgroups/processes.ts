// What the processes of a cgroup (and of the cgroups below it) hold, from /proc: open file descriptors,
// sockets among them, their threads' scheduler states and the first process's soft limit on open
// files. cAdvisor reports these per container; the kernel keeps no per-cgroup total, so they are
// counted process by process. A container decides how many processes, threads and descriptors it has,
// and skiffd runs as root outside the container's CPU limit, so the work is bounded before it is done:
// each cgroup directory is counted at most once per CACHE_NS whoever asks (a pod's total reuses its
// containers'), sizes are checked from one read per process before any per-thread or per-descriptor
// work, and past a bound a count is left out rather than reported short.
import { type FileHandle, open, opendir, readlink } from 'node:fs/promises';
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

/**
 * The first `max` bytes of a /proc file, read off the event loop (a container with thousands of threads
 * must not stall the daemon); enough for the lines wanted, whatever the rest holds (a status file with
 * 65,536 supplementary groups is half a megabyte).
 */
async function procHead(path: string, max = 4096): Promise<string | undefined> {
  let file: FileHandle | undefined;
  try {
    file = await open(path, 'r');
    const buf = Buffer.alloc(max);
    const { bytesRead } = await file.read(buf, 0, max, 0);
    return buf.toString('utf8', 0, bytesRead);
  } catch {
    return undefined;
  } finally {
    await file?.close().catch(() => undefined);
  }
}

/** A process that is gone (or is another by now) is skipped; any other failure leaves the count unknown. */
const gone = (err: unknown) => ['ENOENT', 'ESRCH'].includes((err as NodeJS.ErrnoException).code ?? '');

/**
 * The entries of a /proc directory, spending one unit of `budget` each; undefined when the budget runs
 * out first (the walk stops there, it never lists the rest) or the directory cannot be read but for a
 * process that has gone ([] then).
 */
async function entries(dir: string, budget: { left: number }): Promise<string[] | undefined> {
  const names: string[] = [];
  try {
    for await (const e of await opendir(dir)) {
      if (--budget.left < 0) return undefined;
      names.push(e.name);
    }
    return names;
  } catch (err) {
    return gone(err) ? [] : undefined;
  }
}

interface Process {
  pid: number;
  start: string;
  threads: number;
  fdSlots: number;
}

/** Whether /proc/PID/cgroup places the process in the cgroup at `relPath` (in any hierarchy). */
const inCgroup = (text: string, relPath: string) => text.split('\n').some((line) => line.slice(line.indexOf(':', line.indexOf(':') + 1) + 1) === relPath);

/** The counts of one cgroup directory's own processes (not its children's); `relPath` is its cgroup path. */
async function countDirectory(dir: string, relPath: string): Promise<CgroupProcesses | undefined> {
  const text = await ok(readText(join(dir, 'cgroup.procs')));
  if (text === undefined) return undefined;
  const pids = text
    .split('\n')
    .map(Number)
    .filter((pid) => Number.isInteger(pid) && pid > 0);
  if (pids.length > MAX_PROCESSES) return undefined;
  // First, per process: who it is (a pid listed, then reused by a process elsewhere, is not this cgroup's)
  // and how much there is to count. Sizes over the bounds leave a count out before any work on it.
  const procs: Process[] = [];
  for (const pid of pids) {
    const [stat, status, cgroup] = await Promise.all([procHead(`/proc/${pid}/stat`), procHead(`/proc/${pid}/status`), procHead(`/proc/${pid}/cgroup`)]);
    const fields = stat && statFields(stat);
    const fdSlots = Number(/^FDSize:\s*(\d+)/m.exec(status ?? '')?.[1]);
    if (fields && Number.isInteger(fdSlots) && cgroup && inCgroup(cgroup, relPath)) procs.push({ pid, start: fields.start, threads: fields.threads, fdSlots });
  }
  // The sizes can grow meanwhile, so the same bounds are spent as the work is done, entry by entry.
  const fdBudget = { left: procs.reduce((n, p) => n + p.fdSlots, 0) <= MAX_DESCRIPTORS ? MAX_DESCRIPTORS : -1 };
  const threadBudget = { left: procs.reduce((n, p) => n + p.threads, 0) <= MAX_THREADS ? MAX_THREADS : -1 };
  let fdsKnown = fdBudget.left >= 0;
  let threadsKnown = threadBudget.left >= 0;
  const out: CgroupProcesses = { processes: 0n };
  const states: ThreadStates = { running: 0n, sleeping: 0n, stopped: 0n, uninterruptible: 0n };
  let fds = 0n;
  let sockets = 0n;
  for (const p of procs) {
    const proc = `/proc/${p.pid}`;
    const mine: ThreadStates = { running: 0n, sleeping: 0n, stopped: 0n, uninterruptible: 0n };
    let myFds = 0n;
    let mySockets = 0n;
    if (fdsKnown) {
      const fdNames = await entries(join(proc, 'fd'), fdBudget);
      if (fdNames === undefined) fdsKnown = false;
      else {
        myFds = BigInt(fdNames.length);
        for (const fd of fdNames) if ((await ok(readlink(join(proc, 'fd', fd))))?.startsWith('socket:')) mySockets++;
      }
    }
    if (threadsKnown) {
      const tids = await entries(join(proc, 'task'), threadBudget);
      if (tids === undefined) threadsKnown = false;
      else
        for (const tid of tids) {
          const state = statState((await procHead(join(proc, 'task', tid, 'stat'), 512)) ?? '');
          if (state === 'R') mine.running++;
          else if (state === 'S' || state === 'I') mine.sleeping++;
          else if (state === 'D') mine.uninterruptible++;
          else if (state === 'T' || state === 't') mine.stopped++;
        }
    }
    const limits = out.processes === 0n ? await procHead(`${proc}/limits`) : undefined;
    // A process that ended meanwhile, its pid perhaps taken by another, counts for nothing.
    const again = await procHead(`${proc}/stat`, 1024);
    if (!again || statFields(again)?.start !== p.start) continue;
    if (out.processes === 0n && limits) out.maxOpenFilesSoft = parseMaxOpenFiles(limits);
    out.processes++;
    fds += myFds;
    sockets += mySockets;
    for (const k of Object.keys(states) as (keyof ThreadStates)[]) states[k] += mine[k];
  }
  if (fdsKnown) Object.assign(out, { fileDescriptors: fds, sockets });
  if (threadsKnown) out.threads = states;
  return out;
}

interface CacheEntry {
  /** When the count finished; undefined while it runs (every reader then shares it). */
  at?: bigint;
  counts: Promise<CgroupProcesses | undefined>;
}
const cache = new Map<string, CacheEntry>();
let prunedAt = 0n;

/** One directory's counts, shared by every reader while it runs and for CACHE_NS after it finished. */
function directoryCounts(dir: string, relPath: string): Promise<CgroupProcesses | undefined> {
  const now = process.hrtime.bigint();
  if (now - prunedAt > CACHE_NS) {
    prunedAt = now;
    for (const [k, e] of cache) if (e.at !== undefined && now - e.at > CACHE_NS) cache.delete(k);
  }
  const hit = cache.get(dir);
  if (hit && (hit.at === undefined || now - hit.at <= CACHE_NS)) return hit.counts;
  const entry: CacheEntry = { counts: countDirectory(dir, relPath) };
  entry.counts.finally(() => (entry.at = process.hrtime.bigint())).catch(() => undefined);
  cache.set(dir, entry);
  return entry.counts;
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
  const base = `/${cgroupPath.replace(/^\/+|\/+$/g, '')}`.replace(/^\/$/, '');
  const dirs: string[] = [];
  let level = [top];
  for (let depth = 0; depth <= MAX_DEPTH && level.length > 0; depth++) {
    dirs.push(...level);
    if (dirs.length > MAX_DIRECTORIES) return undefined;
    const next: string[] = [];
    for (const dir of level) {
      try {
        for await (const e of await opendir(dir)) {
          if (!e.isDirectory()) continue;
          next.push(join(dir, e.name));
          // Processes deeper down would go uncounted: the totals are unknown then, not short.
          if (dirs.length + next.length > MAX_DIRECTORIES || depth === MAX_DEPTH) return undefined;
        }
      } catch {
        // A child that went away meanwhile has no children.
      }
    }
    level = next;
  }
  let total: CgroupProcesses | undefined;
  for (const dir of dirs) {
    const counts = await directoryCounts(dir, `${base}${dir.slice(top.length)}` || '/');
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
