// Host-side helpers: bounded child commands, mount and link cleanup under the benchmark's own
// directories, and process memory from /proc.
import { execFile } from 'node:child_process';
import { accessSync, constants, readdirSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** Runs a command with a hard time limit; resolves with stdout or rejects with stderr in the message. */
export async function run(cmd: string, args: string[], timeoutMs = 15_000): Promise<string> {
  try {
    const { stdout } = await execFileAsync(cmd, args, { timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 16 << 20 });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')}: ${(e.stderr || e.message).trim()}`);
  }
}

export function onPath(cmd: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (!dir) continue;
    try {
      const p = `${dir}/${cmd}`;
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      /* next */
    }
  }
  return undefined;
}

/** Mount points at or below `dir`, deepest first (the order they must be unmounted in). */
export function mountsUnder(dir: string): string[] {
  const points: string[] = [];
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const mountPoint = line.split(' ')[4];
    if (mountPoint && (mountPoint === dir || mountPoint.startsWith(`${dir}/`))) points.push(mountPoint.replace(/\\040/g, ' '));
  }
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

/** Unmounts everything below `dir` (lazily if busy). Returns what could not be unmounted. */
export async function unmountAllUnder(dir: string): Promise<string[]> {
  for (const point of mountsUnder(dir)) {
    await run('umount', [point], 10_000).catch(() => run('umount', ['-l', point], 10_000).catch(() => {}));
  }
  return mountsUnder(dir);
}

export async function deleteLink(name: string): Promise<void> {
  await run('ip', ['link', 'del', name], 10_000).catch(() => {});
}

export interface ProcInfo {
  pid: number;
  ppid: number;
  argv: string[];
}

/** Every process on the host with its parent and argv (processes that vanish mid-scan are skipped). */
export function listProcesses(): ProcInfo[] {
  const out: ProcInfo[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      if (argv[argv.length - 1] === '') argv.pop();
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      out.push({ pid: Number(name), ppid, argv });
    } catch {
      /* gone */
    }
  }
  return out;
}

export interface Memory {
  /** kB */
  rss: number;
  pss: number;
  /** Private_Clean + Private_Dirty, kB */
  priv: number;
}

export const ZERO: Memory = { rss: 0, pss: 0, priv: 0 };

export function memoryOf(pid: number): Memory {
  try {
    const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
    return { rss: field('Rss'), pss: field('Pss'), priv: field('Private_Clean') + field('Private_Dirty') };
  } catch {
    // No smaps_rollup (old kernel) or the process is gone: VmRSS only.
    try {
      const rss = Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
      return { rss, pss: rss, priv: rss };
    } catch {
      return ZERO;
    }
  }
}

export function sumMemory(pids: number[]): Memory {
  return pids.map(memoryOf).reduce((a, m) => ({ rss: a.rss + m.rss, pss: a.pss + m.pss, priv: a.priv + m.priv }), ZERO);
}

export const mb = (kb: number) => `${(kb / 1024).toFixed(1)} MB`;

/** Force-deletes every container a failed run left in a runc root. */
export async function deleteRuncContainers(root: string): Promise<void> {
  const left = await run('runc', ['--root', root, 'list', '-q'], 10_000).catch(() => '');
  for (const id of left.split('\n').filter(Boolean)) await run('runc', ['--root', root, 'delete', '-f', id], 10_000).catch(() => {});
}

/** SIGKILLs each process that is still there. */
export function killAll(pids: readonly number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
}
