// Which pid an exec's teardown may signal. The pid comes from the runtime's --pid-file; a wrong one
// is dangerous: killGroup(1) is kill(-1), every process on the node, and any other pid is someone
// else's process. So pid 0 and 1 (and anything not a positive integer) are refused, and so is a
// process outside the container's cgroup.
import { readFile } from 'node:fs/promises';

/** pid 0 and -1 address groups or everything, 1 is init: no exec of ours has those. */
export function plausibleExecPid(pid: number | undefined): pid is number {
  return pid !== undefined && Number.isSafeInteger(pid) && pid > 1;
}

/**
 * Whether the process is in the cgroup or one below it, on any hierarchy /proc/PID/cgroup lists: on
 * v2 the one unified line, on v1 and hybrid one line per hierarchy (a hybrid host's unified line need
 * not follow the container, its v1 lines do), and under the systemd driver the scope's path on each.
 * The path may show with a prefix when the reader's cgroup namespace root is above the runtime's.
 * False for an empty cgroup path and a process that is gone.
 */
export async function pidInCgroup(pid: number, cgroupPath: string): Promise<boolean> {
  const wanted = `/${cgroupPath.replace(/^\/+|\/+$/g, '')}/`;
  if (wanted === '//') return false;
  const text = await readFile(`/proc/${pid}/cgroup`, 'utf8').catch(() => '');
  for (const line of text.split('\n')) {
    const path = line.split(':').slice(2).join(':');
    if (path && `${path.replace(/\/+$/, '')}/`.includes(wanted)) return true;
  }
  return false;
}

/** Whether an exec's teardown may signal `pid`: the exec's own process, in the container's cgroup. */
export async function execPidSignallable(pid: number | undefined, cgroupPath: string): Promise<boolean> {
  return plausibleExecPid(pid) && pidInCgroup(pid, cgroupPath);
}
