// Deleting a directory tree that may hold mounts (a container's rootfs and image volumes, a pod's
// namespace pins). A recursive delete crosses mount points: into a read-only mount it fails half-way
// (EROFS), into a bind of an image layer it deletes the layer every container shares. So every mount
// below is taken off first, found in the kernel's mount table rather than in any record, and nothing is
// deleted while one remains.
//
// The delete itself is GNU rm, not fs.rm: Node's recursive rm walks by path (lstat, readdir and unlink
// of dir/child/...), resolving every component again at each step, so a directory that a process still
// inside the tree (a container holding its detached overlay) swaps for a symlink between two steps is
// followed, and host root deletes what the link points at. rm walks with fts on directory fds
// (openat with O_NOFOLLOW, unlinkat, device/inode checked against the lstat), so a swapped link is only
// unlinked; it also has no PATH_MAX limit on depth, and --one-file-system refuses to descend into
// anything mounted after the unmount pass.
import { mkdir, readdir, realpath } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { execChecked } from './command.ts';
import { unmountAllUnder } from './mount-table.ts';

/**
 * Bounds one delete: a rootfs or image of many files takes seconds; a wedged filesystem must not
 * hang RemoveContainer forever.
 */
const RM_TIMEOUT_MS = 10 * 60_000;

/** `dir` with its parent resolved as the mount table names it (`dir` itself is not followed); undefined if the parent is missing. */
async function realDir(dir: string): Promise<string | undefined> {
  try {
    return join(await realpath(dirname(dir)), basename(dir));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Unmounts everything at or below `dir`; throws if a mount stays. */
export async function unmountTree(dir: string): Promise<void> {
  const real = await realDir(dir);
  if (real) await unmountAllUnder(real);
}

/** Unmounts everything below `dir`, then deletes it; a missing `dir` is done. Throws, deleting nothing, if a mount stays. */
export async function removeTree(dir: string): Promise<void> {
  const real = await realDir(dir);
  if (!real) return;
  await unmountAllUnder(real);
  // One process per delete (on every RemoveContainer, RemovePodSandbox and image removal): execChecked
  // runs it through an idle helper shell, so the daemon does not fork, and the cost is small next to
  // deleting a tree. -f: a path already gone is done, as before.
  await execChecked('rm', ['-rf', '--one-file-system', '--', real], { timeoutMs: RM_TIMEOUT_MS });
}

/**
 * Start-up sweep: deletes each entry of `dir` (made with `mode` if missing) as removeTree does. An
 * entry that will not go (a mount that stays, an immutable file) is left and reported to `warn` with
 * why: what a crash left behind must never keep the daemon from starting, as a throw would at every start.
 */
export async function sweepDir(dir: string, warn: (msg: string, fields: Record<string, unknown>) => void, mode?: number): Promise<void> {
  await mkdir(dir, { recursive: true, mode });
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    warn('cannot list leftovers to delete; leaving them', { dir, err: String(err) });
    return;
  }
  for (const name of names) {
    const path = join(dir, name);
    await removeTree(path).catch((err) => warn('cannot delete leftovers; leaving them', { path, err: String(err) }));
  }
}
