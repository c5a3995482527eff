// Where each cgroup controller lives on this machine. Hosts run cgroup v1 (one hierarchy per controller
// or per group of controllers), v2 (one unified tree) or hybrid (v1 controllers plus an empty v2 tree,
// as on this project's CI machine); everything that reads or writes cgroups asks here first.
import { readFileSync } from 'node:fs';
import { rmdir } from 'node:fs/promises';
import { join } from 'node:path';

export type CgroupMode = 'v1' | 'v2' | 'hybrid';

export interface CgroupLayout {
  mode: CgroupMode;
  /** v1 controller (cpu, cpuacct, memory, pids, name=systemd...) -> mount point. */
  v1: Map<string, { mountPoint: string; root: string }>;
  /** The cgroup2 mount, if any. */
  unified?: { mountPoint: string; root: string };
  /** Controllers enabled in the unified tree (empty in hybrid mode). */
  unifiedControllers: Set<string>;
}

function unescapeMountPath(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(Number.parseInt(oct, 8)));
}

export function parseCgroupLayout(
  mountinfo: string,
  readControllers: (mountPoint: string) => string = (m) => readFileSync(join(m, 'cgroup.controllers'), 'utf8'),
): CgroupLayout {
  const v1 = new Map<string, { mountPoint: string; root: string }>();
  let unified: CgroupLayout['unified'];
  for (const line of mountinfo.split('\n')) {
    const dash = line.indexOf(' - ');
    if (dash < 0) continue;
    const left = line.slice(0, dash).split(' ');
    const [fstype, , superOptions = ''] = line.slice(dash + 3).split(' ');
    const root = unescapeMountPath(left[3]);
    const mountPoint = unescapeMountPath(left[4]);
    if (fstype === 'cgroup2') {
      if (!unified || mountPoint.length < unified.mountPoint.length) unified = { mountPoint, root };
    } else if (fstype === 'cgroup') {
      for (const option of superOptions.split(',')) {
        if (
          option === 'rw' ||
          option === 'ro' ||
          option.startsWith('release_agent') ||
          option === 'clone_children' ||
          option === 'noprefix' ||
          option === 'xattr'
        )
          continue;
        if (!v1.has(option)) v1.set(option, { mountPoint, root });
      }
    }
  }
  const unifiedControllers = new Set<string>();
  if (unified) {
    try {
      for (const c of readControllers(unified.mountPoint).trim().split(/\s+/)) if (c) unifiedControllers.add(c);
    } catch {
      /* no cgroup.controllers: nothing delegated */
    }
  }
  const realV1 = [...v1.keys()].some((c) => !c.startsWith('name='));
  const mode: CgroupMode = realV1 ? (unified ? 'hybrid' : 'v1') : 'v2';
  return { mode, v1, unified, unifiedControllers };
}

let cached: CgroupLayout | undefined;

export function cgroupLayout(): CgroupLayout {
  cached ??= parseCgroupLayout(readFileSync('/proc/self/mountinfo', 'utf8'));
  return cached;
}

function under(mount: { mountPoint: string; root: string }, cgroupPath: string): string {
  // Inside a cgroup namespace the mount's root is not '/': paths we are given are host-absolute.
  let rel = cgroupPath.startsWith('/') ? cgroupPath : `/${cgroupPath}`;
  if (mount.root !== '/' && (rel === mount.root || rel.startsWith(`${mount.root}/`))) rel = rel.slice(mount.root.length);
  return join(mount.mountPoint, rel);
}

/**
 * The directory holding `controller`'s files for a cgroup path, or undefined when this host has no
 * such controller. On v2 every controller shares the unified directory.
 */
export function controllerDir(controller: string, cgroupPath: string, layout: CgroupLayout = cgroupLayout()): string | undefined {
  if (layout.mode === 'v2') return layout.unified ? under(layout.unified, cgroupPath) : undefined;
  const mount = layout.v1.get(controller);
  return mount ? under(mount, cgroupPath) : undefined;
}

/** The cgroup's directory in the cgroup2 tree, whether or not controllers are enabled there. */
export function unifiedDir(cgroupPath: string, layout: CgroupLayout = cgroupLayout()): string | undefined {
  return layout.unified ? under(layout.unified, cgroupPath) : undefined;
}

/** A controller the OCI runtime can use: a mounted v1 hierarchy, or enabled in the unified tree on v2. */
export function hasController(controller: string, layout: CgroupLayout = cgroupLayout()): boolean {
  return layout.mode === 'v2' ? layout.unifiedControllers.has(controller) : layout.v1.has(controller);
}

/** Every directory a cgroup path occupies (one per v1 hierarchy, or the unified one). */
export function allCgroupDirs(cgroupPath: string, layout: CgroupLayout = cgroupLayout()): string[] {
  const dirs = new Set<string>();
  if (layout.mode === 'v2') {
    if (layout.unified) dirs.add(under(layout.unified, cgroupPath));
  } else {
    for (const mount of layout.v1.values()) dirs.add(under(mount, cgroupPath));
    if (layout.unified) dirs.add(under(layout.unified, cgroupPath));
  }
  return [...dirs];
}

/**
 * A cgroupfs path for a parent the client named. systemd slice names (`kubepods-burstable-pod1.slice`)
 * expand the way systemd nests them (`/kubepods.slice/kubepods-burstable.slice/...`).
 */
export function cgroupfsPath(parent: string): string {
  if (!parent.endsWith('.slice') || parent.includes('/')) return parent.startsWith('/') ? parent : `/${parent}`;
  const name = parent.slice(0, -'.slice'.length);
  if (name === '-' || name === '') return '/';
  const parts = name.split('-');
  const path: string[] = [];
  for (let i = 1; i <= parts.length; i++) path.push(`${parts.slice(0, i).join('-')}.slice`);
  return `/${path.join('/')}`;
}

/** Removes an (empty) cgroup from every hierarchy; a missing one is fine, a busy one is reported. */
export async function removeCgroup(cgroupPath: string, layout: CgroupLayout = cgroupLayout()): Promise<void> {
  const busy: string[] = [];
  for (const dir of allCgroupDirs(cgroupPath, layout)) {
    try {
      await rmdir(dir);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') busy.push(`${dir} (${code})`);
    }
  }
  if (busy.length > 0) throw new Error(`cannot remove cgroup ${cgroupPath}: ${busy.join(', ')}`);
}
