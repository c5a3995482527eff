// ID-mapped mounts for containers in a pod's user namespace: a clone of a mount, ID-mapped with the
// pod's user namespace (open_tree, mount_setattr MOUNT_ATTR_IDMAP, move_mount), attached under
// `<state>/idmap/<container>/`. runc 1.1 makes none, so skiffd does, for two things:
// - volumes with `Mount.uidMappings`/`gidMappings` (the kubelet sets them on every volume of such a
//   pod): made just before the runtime creates the container, bound by config.json instead of the
//   volume, and detached once the container's mount namespace holds its own copy;
// - image layers, under the container's overlay rootfs (idmap-rootfs.ts).
// Files keep their owners on disk; root-owned files are root's inside the container.
//
// Node cannot make these system calls, so Perl (perl-base: part of every Debian system) makes them.
// The numbers are the same on every architecture (they come after the syscall tables were unified).
import { mkdir, readdir, readFile, rmdir, stat, unlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Mount } from '../../../proto/gen/runtime/v1/api.ts';
import { sameMappings, type UserNamespaceMappings } from '../pods/userns.ts';
import { execCommand } from '../util/command.ts';
import { unmount } from '../util/mount-calls.ts';
import { invalidArgument } from './errors.ts';

// Arguments: the user namespace file, then source and target pairs.
export const IDMAP_SCRIPT = `use strict; use warnings;
my ($userns, @pairs) = @ARGV;
open(my $ns, '<', $userns) or die "open $userns: $!\\n";
my $attr = pack('QQQQ', 0x00100000, 0, 0, fileno($ns));         # struct mount_attr { MOUNT_ATTR_IDMAP, 0, 0, userns_fd }
while (my ($src, $dst) = splice(@pairs, 0, 2)) {
  my ($empty1, $empty2) = ("", "");
  my $tree = syscall(428, -100, $src, 1 | 0x80000);             # open_tree(AT_FDCWD, src, OPEN_TREE_CLONE|O_CLOEXEC)
  die "open_tree $src: $!\\n" if $tree < 0;
  syscall(442, $tree, $empty1, 0x1000, $attr, length($attr)) == 0  # mount_setattr(tree, "", AT_EMPTY_PATH, ...)
    or die "the filesystem of $src cannot be ID-mapped here (mount_setattr: $!)\\n";
  syscall(429, $tree, $empty2, -100, $dst, 4) == 0                # move_mount(tree, "", AT_FDCWD, dst, MOVE_MOUNT_F_EMPTY_PATH)
    or die "move_mount $dst: $!\\n";
  POSIX::close($tree);
}
`;

const TIMEOUT_MS = 10_000;

/** A mount to ID-map (a volume, or an image layer): the host path, and where the ID-mapped clone goes. */
export interface IdmappedMount {
  source: string;
  target: string;
}

/**
 * Checks the mappings the client put on mounts: they must be the pod's (the only user namespace the
 * container can be in). Returns the indexes of the mounts to ID-map.
 */
export function planIdmappedMounts(mounts: readonly Mount[], pod: UserNamespaceMappings | undefined): number[] {
  const out: number[] = [];
  mounts.forEach((m, i) => {
    if (m.uidMappings.length === 0 && m.gidMappings.length === 0) return;
    const field = `config.mounts[${i}]`;
    if (!pod) throw invalidArgument(field, 'uidMappings/gidMappings given, but the pod has no user namespace of its own');
    const asked = m.uidMappings.length === 1 && m.gidMappings.length === 1 ? { uids: m.uidMappings[0], gids: m.gidMappings[0] } : undefined;
    if (!asked || !sameMappings(asked, pod)) {
      throw invalidArgument(field, "uidMappings and gidMappings must each be the pod's one user namespace mapping");
    }
    if (m.image?.image) throw invalidArgument(field, 'an image volume cannot be ID-mapped');
    out.push(i);
  });
  return out;
}

export function idmapDir(stateIdmapDir: string, containerId: string): string {
  return join(stateIdmapDir, containerId);
}

/** Makes the ID-mapped clones; on failure, whatever was made is detached again. */
export async function attachIdmappedMounts(mounts: readonly IdmappedMount[], usernsPath: string): Promise<void> {
  try {
    for (const m of mounts) {
      // A mount goes onto its own kind: a directory, or a file (the kubelet binds /etc/hosts and
      // /dev/termination-log as files).
      if ((await stat(m.source)).isDirectory()) await mkdir(m.target, { recursive: true });
      else {
        await mkdir(dirname(m.target), { recursive: true });
        await writeFile(m.target, '', { flag: 'a' });
      }
    }
    // One Perl for all of them: its start is most of the cost.
    const r = await execCommand('perl', ['-MPOSIX', '-e', IDMAP_SCRIPT, usernsPath, ...mounts.flatMap((m) => [m.source, m.target])], { timeoutMs: TIMEOUT_MS });
    if (r.code !== 0) throw new Error(`ID-mapping ${mounts.map((m) => m.source).join(', ')}: ${r.stderr.trim() || `exit ${r.code}`}`);
  } catch (err) {
    await detachIdmappedMounts(mounts.map((m) => m.target));
    throw err;
  }
}

/**
 * Detaches the clones and removes their mount points. Never a recursive remove: a mount point that
 * cannot be detached keeps its directory, so nothing under a volume is ever deleted.
 */
export async function detachIdmappedMounts(targets: readonly string[]): Promise<void> {
  const attached = await mountPointsAmong(targets);
  for (const target of attached) await unmount(target, { detach: true }).catch(() => {});
  const still = new Set(await mountPointsAmong(targets));
  for (const target of targets) {
    if (still.has(target)) continue;
    await rmdir(target).catch(() => unlink(target).catch(() => {}));
  }
  for (const dir of new Set(targets.map((t) => dirname(t)))) await rmdir(dir).catch(() => {});
}

async function mountPointsAmong(paths: readonly string[]): Promise<string[]> {
  const wanted = new Set(paths);
  const unescapeField = (f: string) => f.replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(Number.parseInt(oct, 8)));
  const found = (await readFile('/proc/self/mountinfo', 'utf8')).split('\n').map((l) => unescapeField(l.split(' ')[4] ?? ''));
  return [...new Set(found.filter((p) => wanted.has(p)))];
}

/** At startup: clones left by a start that a crash cut short (the runtime never needs them again). */
export async function sweepIdmappedMounts(stateIdmapDir: string): Promise<void> {
  for (const id of await readdir(stateIdmapDir).catch(() => [] as string[])) {
    const dir = join(stateIdmapDir, id);
    const names = await readdir(dir).catch(() => [] as string[]);
    await detachIdmappedMounts(names.map((n) => join(dir, n)));
    await rmdir(dir).catch(() => {});
  }
}
