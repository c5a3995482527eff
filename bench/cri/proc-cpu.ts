// CPU time of processes from /proc/PID/stat (clock ticks, not wall clock): a process's own user+system
// time, and the time of the children it has reaped (cutime+cstime), which is where short-lived
// commands such as `runc exec` end up once their parent has waited for them.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

export interface CpuTicks {
  /** utime + stime */
  self: number;
  /** cutime + cstime: children that exited and were waited for */
  reaped: number;
}

let tick: number | undefined;
/** Clock ticks per second (USER_HZ), 100 on Linux unless getconf says otherwise. */
export function ticksPerSecond(): number {
  if (tick === undefined) {
    try {
      tick = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      tick = 100;
    }
  }
  return tick;
}

export function cpuTicks(pid: number): CpuTicks | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): state is field 3, utime field 14.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const n = (i: number) => Number(f[i - 3]);
    return { self: n(14) + n(15), reaped: n(16) + n(17) };
  } catch {
    return undefined;
  }
}

/** Readings of many processes at one moment. */
export type CpuSnapshot = Map<number, CpuTicks>;

export function snapshot(pids: Iterable<number>): CpuSnapshot {
  const out: CpuSnapshot = new Map();
  for (const pid of pids) {
    const t = cpuTicks(pid);
    if (t) out.set(pid, t);
  }
  return out;
}

/**
 * Ticks spent between two snapshots by the processes present in both (own time, and reaped children
 * separately). A process that came or went in between is left out: in a steady window the long-lived
 * set does not change, and short-lived commands are counted through their parent's reaped time.
 */
export function spent(before: CpuSnapshot, after: CpuSnapshot, pids: Iterable<number>): CpuTicks {
  let self = 0;
  let reaped = 0;
  for (const pid of pids) {
    const a = before.get(pid);
    const b = after.get(pid);
    if (!a || !b) continue;
    self += b.self - a.self;
    reaped += b.reaped - a.reaped;
  }
  return { self, reaped };
}
