// The root filesystem of a container in a pod's user namespace must be owned by the pod's host IDs,
// or root in the container would own nothing in it. Without ID-mapped mounts (runc 1.1 has none, and
// the kernel cannot ID-map an overlayfs mount itself), skiffd chowns the container's own overlay:
// mounted with metacopy=on, a chown copies up only the inode (no file data) into the container's
// upper dir, so the image layers stay shared and untouched. The cost is one walk of the image tree
// per container, and one small inode per file in the writable layer.
import { chmod, lchown, lstat, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { shiftId, type UserNamespaceMappings } from '../pods/userns.ts';

const PARALLEL = 32;

async function overflowIds(): Promise<{ uid: number; gid: number }> {
  const read = async (name: string) => Number((await readFile(`/proc/sys/kernel/${name}`, 'utf8').catch(() => '65534')).trim()) || 65534;
  return { uid: await read('overflowuid'), gid: await read('overflowgid') };
}

/**
 * Re-owns every file under `root` (not following symlinks, not crossing into other mounts) from
 * container IDs to the pod's host IDs; IDs outside the mapped range become the kernel's overflow IDs.
 * chown(2) clears set-user-ID and set-group-ID bits, so they are put back; file capabilities
 * (security.capability) are lost, as with any chown. Returns how many entries were changed.
 */
export async function shiftOwnership(root: string, mappings: UserNamespaceMappings): Promise<number> {
  const overflow = await overflowIds();
  const rootDev = (await lstat(root)).dev;
  let changed = 0;
  const queue: string[] = [root];
  const one = async (path: string) => {
    const st = await lstat(path);
    if (st.dev !== rootDev) return;
    await lchown(path, shiftId(st.uid, mappings.uids, overflow.uid), shiftId(st.gid, mappings.gids, overflow.gid));
    changed++;
    if (!st.isSymbolicLink() && st.mode & 0o6000) await chmod(path, st.mode & 0o7777);
    if (st.isDirectory()) for (const name of await readdir(path)) queue.push(join(path, name));
  };
  // A bounded pool: images hold thousands of files, and each one is a few syscalls.
  let running = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (!failure) {
      const next = queue.pop();
      if (next === undefined) {
        // Others may still be listing directories: stop only when nothing is queued or running.
        if (running === 0) return;
        await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      running++;
      try {
        await one(next);
      } catch (error) {
        failure ??= { error };
      } finally {
        running--;
      }
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
  if (failure) throw failure.error;
  return changed;
}
