// What /proc says about a container's processes: identity (start time), whether the monitor lives,
// whether the init has become the container's program yet, and how it treats a signal. /proc files
// are generated in memory: a synchronous read takes microseconds, an async one four thread-pool trips.
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** Field 22 of /proc/PID/stat (start time in clock ticks since boot); undefined if the process is gone. */
export async function processStartTime(pid: number): Promise<string | undefined> {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** conmon is alive: the pid exists, is not a zombie, and is still conmon (not a reused pid). */
export async function monitorAlive(pid: number): Promise<boolean> {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const m = /^\d+ \((.*)\) (\S)/.exec(stat);
    return !!m && m[1] === 'conmon' && m[2] !== 'Z' && m[2] !== 'X';
  } catch {
    return false;
  }
}

export function killIfConmon(pid: number): void {
  try {
    if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'conmon') process.kill(pid, 'SIGKILL');
  } catch {
    /* gone */
  }
}

/**
 * The runtime's init (runc names itself `runc:[2:INIT]`) still runs in place of the container's
 * program. `runc start` returns before the init calls execve, and a signal that lands in that window
 * is taken by the runtime's own handlers and lost to the program.
 */
export async function isRuntimeInit(pid: number, runtimeName: string): Promise<boolean> {
  try {
    const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    return comm.startsWith('runc:[') || comm === runtimeName;
  } catch {
    return false;
  }
}

/** Waits (at most timeoutMs) until the init has exec'd the container's program or is gone. */
export async function untilProgramRuns(pid: number, runtimeName: string, timeoutMs: number): Promise<void> {
  const start = Date.now();
  // Closely at first (the execve is usually a few ms away), then gently on a slow node.
  while ((await isRuntimeInit(pid, runtimeName)) && Date.now() - start < timeoutMs) await sleep(Date.now() - start < 2_000 ? 2 : 50);
}

/**
 * Whether the process has a handler for the signal (SigCgt in /proc/PID/status). A PID namespace's
 * init without one never sees the signal: the kernel drops it.
 */
export async function catchesSignal(pid: number, signal: number): Promise<boolean> {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const mask = /^SigCgt:\s*([0-9a-f]+)$/m.exec(status)?.[1];
    return !!mask && ((BigInt(`0x${mask}`) >> BigInt(signal - 1)) & 1n) === 1n;
  } catch {
    return false;
  }
}
