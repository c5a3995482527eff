// A pod that shares one PID namespace needs a live init to hold it: catatonit -P, started as PID 1 of a
// new PID namespace (unshare --pid --fork), inside the pod's other namespaces. It is detached into its
// own session so it outlives a daemon crash; we remember its pid and start time (pids get reused) and
// tag its environment with the pod id, so a restart can find one even if its pid was never recorded.
import { spawn } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import { killGroup } from '../util/kill-group.ts';

export const POD_ENV_MARKER = 'SKIFFD_POD_SANDBOX';

export interface PidInit {
  pid: number;
  /** Field 22 of /proc/PID/stat (clock ticks since boot): tells a reused pid apart. */
  startTime: string;
}

const START_TIMEOUT_MS = 5_000;

async function procStat(pid: number): Promise<{ comm: string; state: string; startTime: string; ppid: number } | undefined> {
  let text: string;
  try {
    text = await readFile(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // fields[0] is stat field 3 (state); start time is field 22.
  return { comm: text.slice(text.indexOf('(') + 1, text.lastIndexOf(')')), state: fields[0], ppid: Number(fields[1]), startTime: fields[19] };
}

export async function pidInitAlive(init: PidInit): Promise<boolean> {
  const stat = await procStat(init.pid);
  return !!stat && stat.comm === 'catatonit' && stat.startTime === init.startTime && stat.state !== 'Z' && stat.state !== 'X';
}

export function pidNamespacePath(init: PidInit): string {
  return `/proc/${init.pid}/ns/pid`;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startPidInit(
  podId: string,
  namespaces: { user?: string; net?: string; ipc?: string; uts?: string },
  catatonit = 'catatonit',
): Promise<PidInit> {
  const enter: string[] = [];
  // In a pod's own user namespace, the PID namespace is made inside it too, so its containers may join it.
  if (namespaces.user) enter.push(`--user=${namespaces.user}`);
  if (namespaces.net) enter.push(`--net=${namespaces.net}`);
  if (namespaces.ipc) enter.push(`--ipc=${namespaces.ipc}`);
  if (namespaces.uts) enter.push(`--uts=${namespaces.uts}`);
  const command = ['unshare', '--pid', '--fork', '--', catatonit, '-P'];
  const [file, ...args] = enter.length > 0 ? ['nsenter', ...enter, '--', ...command] : command;
  const child = spawn(file, args, {
    detached: true,
    stdio: 'ignore',
    env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', [POD_ENV_MARKER]: podId },
  });
  const spawnError = new Promise<never>((_, reject) => child.once('error', reject));
  spawnError.catch(() => {});
  let exited: string | undefined;
  child.once('exit', (code, signal) => (exited = signal ?? `exit code ${code}`));
  child.unref();
  const parent = child.pid;
  if (parent === undefined) await spawnError;
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (exited) throw new Error(`${file} ${args.join(' ')} ended before catatonit started (${exited})`);
    const children = await readFile(`/proc/${parent}/task/${parent}/children`, 'utf8').catch(() => '');
    const pid = Number(children.trim().split(' ')[0]);
    if (pid > 0) {
      const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
      const nspid = /^NSpid:\s+(.*)$/m.exec(status)?.[1].trim().split(/\s+/);
      const stat = await procStat(pid);
      // Wait for the exec: until then the child is unshare's fork, not yet catatonit.
      const comm = (await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '')).trim();
      if (stat && nspid && nspid[nspid.length - 1] === '1' && comm === 'catatonit') return { pid, startTime: stat.startTime };
    }
    await sleep(2);
  }
  killGroup(parent!);
  throw new Error(`catatonit did not start within ${START_TIMEOUT_MS} ms`);
}

/** Kills the init (and with it every process in the pod's PID namespace) and waits until it is gone. */
export async function stopPidInit(init: PidInit): Promise<void> {
  if (!(await pidInitAlive(init))) return;
  try {
    process.kill(init.pid, 'SIGKILL');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline && (await pidInitAlive(init))) await sleep(2);
  if (await pidInitAlive(init)) throw new Error(`catatonit (pid ${init.pid}) did not exit after SIGKILL`);
}

/** A catatonit started for `podId` whose pid was never recorded (the daemon died in between). */
export async function findPidInitByMarker(podId: string): Promise<PidInit | undefined> {
  const needle = `\0${POD_ENV_MARKER}=${podId}\0`;
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const comm = (await readFile(`/proc/${name}/comm`, 'utf8').catch(() => '')).trim();
    if (comm !== 'catatonit') continue;
    const environ = await readFile(`/proc/${name}/environ`, 'latin1').catch(() => '');
    if (!`\0${environ}`.includes(needle)) continue;
    const stat = await procStat(Number(name));
    if (stat && stat.state !== 'Z') return { pid: Number(name), startTime: stat.startTime };
  }
  return undefined;
}
