// The root filesystem of a container in a pod's user namespace: overlayfs over ID-mapped clones of the
// image's layers. The kernel cannot ID-map an overlayfs mount itself, but overlayfs takes ID-mapped
// layers: each layer is cloned and mapped with the pod's user namespace (idmap-mounts.ts), the overlay
// is mounted over the clones, and the clones are detached again (overlayfs keeps its own references).
// Root-owned image files are then the container's root's; the layers stay shared and untouched on
// disk, nothing is copied, and set-ID bits and file capabilities stay as they are.
import { chown, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { UserNamespaceMappings } from '../pods/userns.ts';
import { attachIdmappedMounts, detachIdmappedMounts } from './idmap-mounts.ts';
import { isMountPoint } from '../util/mount-table.ts';
import { mountRootfs, type RootfsDirs } from './rootfs.ts';

/**
 * Mounts `dirs.merged` as mountRootfs does, over ID-mapped clones of `lowerDirs` staged under `stagingDir`.
 * The writable layer's root belongs to the container's root: it is the overlay's root directory.
 */
export async function mountIdmappedRootfs(
  dirs: RootfsDirs,
  lowerDirs: string[],
  stagingDir: string,
  usernsPath: string,
  mappings: UserNamespaceMappings,
  fresh = false,
): Promise<void> {
  if (!fresh && (await isMountPoint(dirs.merged))) return;
  await mkdir(dirs.upper, { recursive: true });
  await chown(dirs.upper, mappings.uids.hostId, mappings.gids.hostId);
  const clones = lowerDirs.map((source, i) => ({ source, target: join(stagingDir, `layer-${i}`) }));
  await attachIdmappedMounts(clones, usernsPath);
  try {
    await mountRootfs(
      dirs,
      clones.map((c) => c.target),
      true,
    );
  } finally {
    await detachIdmappedMounts(clones.map((c) => c.target));
  }
}
