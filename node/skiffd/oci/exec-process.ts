// The process an exec starts in a running container: the container's own process (user and groups,
// environment, working directory, capabilities, AppArmor profile, no_new_privs, rlimits) running the
// exec's command. It goes to the runtime whole (`exec --process FILE`), as containerd and CRI-O hand it,
// because runtimes differ in what an exec takes from the container by itself: runc copies the
// container's process, crun 1.8 starts the command as root.
import { writeFile } from 'node:fs/promises';
import type { OciProcess } from './spec.ts';

export function execProcess(container: OciProcess, args: string[], terminal: boolean): OciProcess {
  // The runtime sizes an exec's terminal from its own; a size kept from the container's start would win.
  const { consoleSize: _size, ...own } = container as OciProcess & { consoleSize?: unknown };
  return { ...own, args, terminal };
}

/** Readable by root alone: the environment can hold a pod's secrets. */
export function writeProcessFile(path: string, process: OciProcess): Promise<void> {
  return writeFile(path, JSON.stringify(process), { mode: 0o600, flag: 'wx' });
}
