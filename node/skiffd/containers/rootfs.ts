// A container's root filesystem: overlayfs over the image's unpacked layers, with a per-container
// upper and work dir. The mount lives in the host mount namespace, so it outlives a daemon restart.
import { mkdir, readFile, lstat, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { MAX_MOUNT_DATA, mount, unmountOrDetach } from '../util/mount-calls.ts';
import { isMountPoint } from '../util/mount-table.ts';

export interface RootfsDirs {
  upper: string;
  work: string;
  merged: string;
}

export function rootfsDirs(containerDir: string): RootfsDirs {
  return { upper: join(containerDir, 'upper'), work: join(containerDir, 'work'), merged: join(containerDir, 'rootfs') };
}

/** lowerDirs are base layer first, as images list them; overlayfs wants the top layer first. */
export async function mountRootfs(dirs: RootfsDirs, lowerDirs: string[], fresh = false): Promise<void> {
  if (lowerDirs.length === 0) throw new Error('an image with no layers cannot be a root filesystem');
  await Promise.all([mkdir(dirs.upper, { recursive: true }), mkdir(dirs.work, { recursive: true }), mkdir(dirs.merged, { recursive: true })]);
  if (!fresh && (await isMountPoint(dirs.merged))) return;
  const data = `lowerdir=${[...lowerDirs].reverse().join(':')},upperdir=${dirs.upper},workdir=${dirs.work}`;
  if (data.length > MAX_MOUNT_DATA) throw new Error(`overlay mount options too long (${data.length} bytes, ${lowerDirs.length} layers)`);
  for (const d of lowerDirs) if (d.includes(',') || d.includes(':')) throw new Error(`layer path ${d} contains ',' or ':'`);
  await mount({ source: 'overlay', target: dirs.merged, fstype: 'overlay', data }).catch((err: Error) => {
    throw new Error(`mounting the overlay root filesystem at ${dirs.merged} failed: ${err.message}`);
  });
}

export function unmountRootfs(dirs: RootfsDirs): Promise<void> {
  return unmountDir(dirs.merged);
}

/** Unmounts whatever is mounted at `dir` and removes the directory (a mount point skiffd made). */
export async function unmountDir(dir: string): Promise<void> {
  for (let i = 0; i < 5 && (await isMountPoint(dir)); i++) {
    await unmountOrDetach(dir);
  }
  await rmdir(dir).catch(() => {});
}

/**
 * Reads a small text file of the image (/etc/passwd...) without following symlinks out of the
 * rootfs: a symlinked /etc or file is treated as absent.
 */
export async function readImageFile(rootfs: string, relPath: string): Promise<string> {
  let cur = rootfs;
  for (const part of relPath.split('/').filter(Boolean)) {
    cur = join(cur, part);
    try {
      if ((await lstat(cur)).isSymbolicLink()) return '';
    } catch {
      return '';
    }
  }
  try {
    return await readFile(cur, 'utf8');
  } catch {
    return '';
  }
}
