// What the processes of a cgroup (and of the cgroups below it) hold, from /proc: open file descriptors,
// sockets among them, their threads' scheduler states and the first process's soft limit on open
// files. cAdvisor reports these per container; the kernel keeps no per-cgroup total, so each scrape
// walks the processes. A container decides how many processes and descriptors it has, so the walk is
// bounded: past the bound a count is left out rather than reported short.
import { readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { readText } from './files.ts';
import { cgroupLayout, controllerDir, type CgroupLayout } from './layout.ts';

/** Processes, threads and descriptors one walk looks at, at most. */
const MAX_PROCESSES = 1024;
const MAX_THREADS = 8192;
const MAX_DESCRIPTORS = 65_536;
/** A pod's containers are child cgroups of the pod's, and v2 keeps processes in leaves only. */
const MAX_DEPTH = 2;

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

/** Pids listed in the cgroup's `cgroup.procs` and, down to MAX_DEPTH, its children's; at most `max`. */
export async function cgroupPids(cgroupPath: string, max = MAX_PROCESSES, layout: CgroupLayout = cgroupLayout()): Promise<number[] | undefined> {
  // Every v1 hierarchy lists the same processes; any that has the cgroup will do.
  const top = controllerDir('pids', cgroupPath, layout) ?? controllerDir('memory', cgroupPath, layout) ?? controllerDir('cpuacct', cgroupPath, layout);
  if (!top) return undefined;
  const pids: number[] = [];
  let level = [top];
  let found = false;
  for (let depth = 0; depth <= MAX_DEPTH && level.length > 0; depth++) {
    const next: string[] = [];
    for (const dir of level) {
      const text = await readText(join(dir, 'cgroup.procs')).catch(() => undefined);
      if (text === undefined) continue;
      found = true;
      for (const line of text.split('\n')) {
        const pid = Number(line);
        if (line !== '' && Number.isInteger(pid) && pid > 0) pids.push(pid);
        if (pids.length > max) return pids;
      }
      if (depth < MAX_DEPTH) {
        const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
        for (const e of entries) if (e.isDirectory()) next.push(join(dir, e.name));
      }
    }
    level = next;
  }
  return found ? pids : undefined;
}

/** The state letter of /proc/PID/stat (or a task's), after the command name, which may hold anything. */
export function statState(stat: string): string | undefined {
  const close = stat.lastIndexOf(')');
  return close < 0 ? undefined : stat.slice(close + 2, close + 3) || undefined;
}

/** "Max open files" soft value from /proc/PID/limits; undefined when unlimited. */
export function parseMaxOpenFiles(limits: string): bigint | undefined {
  const line = limits.split('\n').find((l) => l.startsWith('Max open files'));
  const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
  return soft && /^\d+$/.test(soft) ? BigInt(soft) : undefined;
}

const ok = <T>(p: Promise<T>) => p.catch(() => undefined);

export async function readCgroupProcesses(cgroupPath: string, layout: CgroupLayout = cgroupLayout()): Promise<CgroupProcesses | undefined> {
  const pids = await cgroupPids(cgroupPath, MAX_PROCESSES, layout);
  if (pids === undefined) return undefined;
  if (pids.length > MAX_PROCESSES) return undefined;
  const out: CgroupProcesses = { processes: BigInt(pids.length) };
  let fds = 0n;
  let sockets = 0n;
  let descriptorsSeen = 0;
  let threadsSeen = 0;
  const states: ThreadStates = { running: 0n, sleeping: 0n, stopped: 0n, uninterruptible: 0n };
  let fdsKnown = true;
  let threadsKnown = true;
  for (const pid of pids) {
    // A process that exits meanwhile simply counts for nothing.
    const proc = `/proc/${pid}`;
    if (fdsKnown) {
      const entries = (await ok(readdir(join(proc, 'fd')))) ?? [];
      descriptorsSeen += entries.length;
      if (descriptorsSeen > MAX_DESCRIPTORS) fdsKnown = false;
      else {
        fds += BigInt(entries.length);
        for (const fd of entries) if ((await ok(readlink(join(proc, 'fd', fd))))?.startsWith('socket:')) sockets++;
      }
    }
    if (threadsKnown) {
      const tids = (await ok(readdir(join(proc, 'task')))) ?? [];
      threadsSeen += tids.length;
      if (threadsSeen > MAX_THREADS) threadsKnown = false;
      else
        for (const tid of tids) {
          const state = statState((await ok(readText(join(proc, 'task', tid, 'stat')))) ?? '');
          if (state === 'R') states.running++;
          else if (state === 'S' || state === 'I') states.sleeping++;
          else if (state === 'D') states.uninterruptible++;
          else if (state === 'T' || state === 't') states.stopped++;
        }
    }
  }
  if (fdsKnown) Object.assign(out, { fileDescriptors: fds, sockets });
  if (threadsKnown) out.threads = states;
  if (pids.length > 0) {
    const limits = await ok(readText(`/proc/${pids[0]}/limits`));
    if (limits) out.maxOpenFilesSoft = parseMaxOpenFiles(limits);
  }
  return out;
}
