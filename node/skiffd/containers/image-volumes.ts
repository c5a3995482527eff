// Image volumes (Kubernetes' `image` volume source, KEP-4639): a mount whose source is an image the
// node has pulled. Its unpacked layers are mounted read-only, once per container, as an overlay with
// no upper directory (one layer: a read-only bind of it), so nothing is copied; the container binds
// that view, or one path in it (`image_sub_path`), read-only and noexec. The mount lives in the host's
// mount namespace under the container's directory, so it outlives a restart of skiffd, and goes with
// the container's rootfs.
import { mkdir, realpath, rmdir } from 'node:fs/promises';
import { isAbsolute, join, sep } from 'node:path';
import type { Mount } from '../../../proto/gen/runtime/v1/api.ts';
import { hostPlatform } from '../images/platform.ts';
import { crashPoint } from '../util/crash-points.ts';
import { bindMountReadOnly, MAX_MOUNT_DATA, mount } from '../util/mount-calls.ts';
import { failedPrecondition, invalidArgument, notFound } from './errors.ts';
import { attachIdmappedMounts, detachIdmappedMounts } from './idmap-mounts.ts';
import { isMountPoint } from '../util/mount-table.ts';
import { unmountDir } from './rootfs.ts';
import type { ImageVolume } from './record.ts';
import type { ImageResolver } from './types.ts';

const field = (i: number, name: string) => `config.mounts[${i}].${name}`;

/** Checks every image mount of a request before anything is made: the image is here, for this platform, asked for read-only. */
export async function planImageVolumes(mounts: readonly Mount[], images: ImageResolver): Promise<ImageVolume[]> {
  const out: ImageVolume[] = [];
  for (const [i, m] of mounts.entries()) {
    const ref = m.image?.image;
    if (!ref) continue;
    if (m.hostPath) throw invalidArgument(field(i, 'host_path'), `set together with an image (${ref}): a mount has one source`);
    if (!m.readonly) throw invalidArgument(field(i, 'readonly'), `the image volume ${ref} can only be mounted read-only`);
    if (m.uidMappings.length > 0 || m.gidMappings.length > 0) throw invalidArgument(field(i, 'uid_mappings'), `the image volume ${ref} cannot be ID-mapped`);
    const subPath = m.imageSubPath;
    if (subPath && (isAbsolute(subPath) || subPath.split('/').includes('..'))) {
      throw invalidArgument(field(i, 'image_sub_path'), `"${subPath}" must be a path inside the image ${ref}, relative and without ".."`);
    }
    const image = await images.resolve(ref);
    if (!image) throw notFound(`${field(i, 'image')}: the image ${ref} is not present on this node: pull it first`);
    const platform = image.platform;
    const host = hostPlatform();
    if (platform && ((platform.os && platform.os !== 'linux') || (platform.architecture && platform.architecture !== host.architecture))) {
      throw failedPrecondition(
        `${field(i, 'image')}: the image ${ref} is for ${platform.os ?? 'linux'}/${platform.architecture}, not this node's linux/${host.architecture}`,
      );
    }
    if (image.artifact?.unmountable) {
      throw failedPrecondition(`${field(i, 'image')}: the OCI artifact ${ref} cannot be mounted: ${image.artifact.unmountable}`);
    }
    if (image.layers.length === 0) throw failedPrecondition(`${field(i, 'image')}: the image ${ref} has no layers to mount`);
    out.push({ index: i, image: ref, imageId: image.id, layers: image.layers, subPath });
  }
  return out;
}

/** Where a container's image volume is mounted on the host. */
export function imageVolumeDir(containerDir: string, volume: ImageVolume): string {
  return join(containerDir, 'image-volumes', String(volume.index));
}

/** A pod's user namespace: the image's files are then owned as the pod's users see them. */
export interface VolumeUserNamespace {
  /** The pod's pinned user namespace. */
  path: string;
  /** Where the ID-mapped clones of the layers are staged while the volume is mounted (removed after). */
  stagingDir: string;
}

/**
 * Mounts the image read-only at its directory (already mounted: left as it is). In a pod with a user
 * namespace the layers are ID-mapped clones, as the container's rootfs is: the kernel cannot ID-map
 * an overlay, but overlayfs takes ID-mapped layers.
 */
export async function mountImageVolume(containerDir: string, volume: ImageVolume, userns?: VolumeUserNamespace): Promise<void> {
  const dir = imageVolumeDir(containerDir, volume);
  await mkdir(dir, { recursive: true });
  if (await isMountPoint(dir)) return;
  for (const d of volume.layers) if (d.includes(',') || d.includes(':')) throw new Error(`layer path ${d} contains ',' or ':'`);
  const clones = userns ? volume.layers.map((source, i) => ({ source, target: join(userns.stagingDir, `volume-${volume.index}-layer-${i}`) })) : [];
  if (userns) await attachIdmappedMounts(clones, userns.path);
  try {
    const layers = userns ? clones.map((c) => c.target) : volume.layers;
    // overlayfs wants two lower layers at least when it has no upper one.
    const data = `lowerdir=${[...layers].reverse().join(':')}`;
    if (data.length > MAX_MOUNT_DATA) throw new Error(`overlay mount options too long for the image ${volume.image} (${layers.length} layers)`);
    const mounted =
      layers.length === 1
        ? bindMountReadOnly(layers[0], dir, () => crashPoint('image-volume-bound'))
        : mount({ source: 'overlay', target: dir, fstype: 'overlay', flags: ['ro'], data });
    await mounted.catch((err: Error) => {
      throw new Error(`mounting the image ${volume.image} at ${dir} failed: ${err.message}`);
    });
  } finally {
    if (userns) await detachIdmappedMounts(clones.map((c) => c.target));
  }
}

/**
 * The host path the container binds: the mounted image, or the sub-path in it. Symlinks are followed
 * as the host sees them, so one that leads out of the image (an absolute link, or `..` up past its
 * root) is refused rather than bound.
 */
export async function imageVolumeSource(containerDir: string, volume: ImageVolume): Promise<string> {
  const mounted = imageVolumeDir(containerDir, volume);
  if (!volume.subPath) return mounted;
  const name = field(volume.index, 'image_sub_path');
  // Real paths on both sides: skiffd's root may itself be reached through a symlink.
  const dir = await realpath(mounted);
  let resolved: string;
  try {
    resolved = await realpath(join(dir, volume.subPath));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw failedPrecondition(`${name}: "${volume.subPath}" does not exist in the image ${volume.image}`);
    throw failedPrecondition(`${name}: "${volume.subPath}" in the image ${volume.image}: ${(err as Error).message}`);
  }
  if (resolved !== dir && !resolved.startsWith(dir + sep)) {
    throw failedPrecondition(`${name}: "${volume.subPath}" leads out of the image ${volume.image} through a symbolic link`);
  }
  return resolved;
}

/** Unmounts a container's image volumes and removes their directories; a busy mount is detached lazily. */
export async function unmountImageVolumes(containerDir: string, volumes: readonly ImageVolume[]): Promise<void> {
  for (const volume of volumes) await unmountDir(imageVolumeDir(containerDir, volume));
  if (volumes.length > 0) await rmdir(join(containerDir, 'image-volumes')).catch(() => {});
}
