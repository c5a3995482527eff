// The cgroup driver: who creates and owns pod and container cgroups. `cgroupfs` makes directories and
// writes limit files itself; `systemd` asks systemd, which then owns every cgroup (pods are the
// kubelet's slices, containers transient scopes that runc creates over D-Bus). Chosen once at start-up
// from `[runtime] cgroup_driver`; callers ask it for paths and changes and never test its name.
//
// Either way a cgroup is known to the rest of skiffd by its path in the hierarchy (as /proc/PID/cgroup
// shows it), so stats read the same files whichever driver made them.
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { execChecked } from '../util/command.ts';
import { cgroupfsPath, removeCgroup } from './layout.ts';
import { sharesToWeight, writeLimits, type CgroupLimits } from './limits.ts';

export type CgroupDriverName = 'cgroupfs' | 'systemd';

export interface PodCgroup {
  /** The pod cgroup's path in the hierarchy, e.g. `/kubepods.slice/kubepods-burstable.slice/…pod<uid>.slice`. */
  path: string;
  /** True when skiffd made it (no parent was given) and so removes it with the pod. */
  owned: boolean;
}

export interface CgroupDriver {
  readonly name: CgroupDriverName;
  /** Flags for every call of the OCI runtime (runc and crun spell them alike). */
  readonly runtimeFlags: readonly string[];
  /** Flags for conmon. */
  readonly conmonFlags: readonly string[];
  /** Why `parent` (a RunPodSandbox `cgroup_parent`) does not suit this driver, or undefined when it does. */
  rejectParent(parent: string): string | undefined;
  /** The pod's cgroup for a client's `cgroup_parent` ('' when none was given). */
  podCgroup(parent: string, podId: string): PodCgroup;
  /** Makes a pod cgroup skiffd owns, before its first container (RunPodSandbox). */
  createPod(podPath: string, podId: string): Promise<void>;
  /** `linux.cgroupsPath` of a container's OCI spec. */
  containerCgroupsPath(podPath: string, containerId: string): string;
  /** Where the container's cgroup appears in the hierarchy once the runtime made it. */
  containerCgroupPath(podPath: string, containerId: string): string;
  /**
   * The inverse of containerCgroupsPath: where the cgroup a spec's `linux.cgroupsPath` names appears
   * in the hierarchy, whoever wrote it (a node plugin may move a container).
   */
  cgroupPathOfSpec(cgroupsPath: string): string;
  /** Sets the pod cgroup's limits (UpdatePodSandboxResources). */
  setPodLimits(podPath: string, limits: CgroupLimits): Promise<void>;
  /** Removes a pod cgroup skiffd owns; a missing one is fine. */
  removePod(podPath: string): Promise<void>;
}

/** Scope and cgroup names start with this, as containerd's start with `cri-containerd`. */
export const UNIT_PREFIX = 'skiffd';

const isSlice = (path: string) => basename(path).endsWith('.slice');

export const cgroupfsDriver: CgroupDriver = {
  name: 'cgroupfs',
  runtimeFlags: [],
  conmonFlags: [],
  rejectParent(parent) {
    return parent.endsWith('.slice') && !parent.includes('/')
      ? `"${parent}" is a systemd slice, and skiffd runs with cgroup_driver = "cgroupfs": set [runtime] cgroup_driver = "systemd" to match the kubelet's cgroupDriver`
      : undefined;
  },
  podCgroup(parent, podId) {
    return parent ? { path: cgroupfsPath(parent), owned: false } : { path: `/${UNIT_PREFIX}/pod-${podId.slice(0, 12)}`, owned: true };
  },
  // The directories appear with the first container (runc makes them) or the first limit written.
  createPod: async () => {},
  containerCgroupsPath(podPath, containerId) {
    return this.containerCgroupPath(podPath, containerId);
  },
  containerCgroupPath(podPath, containerId) {
    return `${podPath === '/' ? '' : podPath}/${UNIT_PREFIX}-${containerId}`;
  },
  cgroupPathOfSpec: (cgroupsPath) => absolute(cgroupsPath),
  setPodLimits: (podPath, limits) => writeLimits(podPath, limits),
  async removePod(podPath) {
    // A pod made under the other driver (the setting changed across a restart) is systemd's to remove.
    if (isSlice(podPath) && systemdBooted()) return stopUnit(basename(podPath));
    await removeCgroup(podPath);
  },
};

export const systemdDriver: CgroupDriver = {
  name: 'systemd',
  runtimeFlags: ['--systemd-cgroup'],
  conmonFlags: ['--systemd-cgroup'],
  rejectParent(parent) {
    if (!parent) return undefined;
    // A slice name, or a path ending in one (critest sends "/test.slice"): the last element names the slice.
    const slice = basename(parent);
    if (!slice.endsWith('.slice'))
      return `"${parent}" is not a systemd slice (NAME.slice), and skiffd runs with cgroup_driver = "systemd": set the kubelet's cgroupDriver to systemd`;
    if (!/^[A-Za-z0-9:_.\\-]+$/.test(slice)) return `"${parent}" is not a valid systemd unit name`;
    return undefined;
  },
  podCgroup(parent, podId) {
    // A slice nests under the slices its dashes name: skiffd-pod<id>.slice lives in skiffd.slice.
    const slice = parent ? basename(parent) : `${UNIT_PREFIX}-pod${podId.slice(0, 12)}.slice`;
    return { path: cgroupfsPath(slice), owned: !parent };
  },
  async createPod(podPath, podId) {
    // A transient slice, as the kubelet makes its pod slices: systemd forgets it once it is stopped,
    // where a slice loaded only as a scope's parent would stay loaded after the pod is gone.
    const slice = sliceOf(podPath);
    await execChecked(
      'busctl',
      [
        'call',
        '--system',
        'org.freedesktop.systemd1',
        '/org/freedesktop/systemd1',
        'org.freedesktop.systemd1.Manager',
        'StartTransientUnit',
        'ssa(sv)a(sa(sv))',
        slice,
        'replace',
        '1',
        'Description',
        's',
        `skiffd pod ${podId.slice(0, 12)}`,
        '0',
      ],
      { timeoutMs: SYSTEMD_CALL_TIMEOUT_MS },
    );
  },
  containerCgroupsPath(podPath, containerId) {
    // runc's systemd form, slice:prefix:name: the container becomes the scope prefix-name.scope in slice.
    return `${sliceOf(podPath)}:${UNIT_PREFIX}:${containerId}`;
  },
  containerCgroupPath(podPath, containerId) {
    return `${podPath === '/' ? '' : podPath}/${UNIT_PREFIX}-${containerId}.scope`;
  },
  cgroupPathOfSpec(cgroupsPath) {
    // runc's systemd form names the scope prefix-name.scope in the slice (runc's default one when none
    // is named); anything else runc refuses at create, and is kept as a path meanwhile.
    const systemd = /^([^:/]*):([^:/]+):([^:/]+)$/.exec(cgroupsPath);
    if (!systemd) return absolute(cgroupsPath);
    const slice = cgroupfsPath(systemd[1] || 'system.slice');
    return `${slice === '/' ? '' : slice}/${systemd[2]}-${systemd[3]}.scope`;
  },
  async setPodLimits(podPath, limits) {
    const properties = unitProperties(limits);
    if (properties.length === 0) return;
    // --runtime: the limits last as long as the slice, like the slice itself.
    await execChecked('systemctl', ['set-property', '--runtime', sliceOf(podPath), ...properties], { timeoutMs: SYSTEMD_CALL_TIMEOUT_MS });
  },
  removePod: (podPath) => stopUnit(sliceOf(podPath)),
};

const absolute = (path: string) => (path.startsWith('/') ? path : `/${path}`);

/** The slice unit a pod path names (its last component), or -.slice for the root. */
function sliceOf(podPath: string): string {
  const last = basename(podPath);
  if (podPath === '/' || last === '') return '-.slice';
  if (!last.endsWith('.slice')) throw new Error(`the pod cgroup ${podPath} is not a systemd slice: it was made under cgroup_driver = "cgroupfs"`);
  return last;
}

/** CRI limits as systemd unit properties (systemd.resource-control(5)). */
export function unitProperties(limits: CgroupLimits): string[] {
  const out: string[] = [];
  if (limits.cpuShares !== undefined) out.push(`CPUWeight=${sharesToWeight(limits.cpuShares)}`);
  if (limits.cpuQuotaUs !== undefined) {
    const period = limits.cpuPeriodUs ?? 100_000;
    // CPUQuota is a whole percentage of one CPU, kept over the same period.
    out.push(`CPUQuota=${Math.max(1, Math.round((limits.cpuQuotaUs / period) * 100))}%`, `CPUQuotaPeriodSec=${period}us`);
  } else if (limits.cpuPeriodUs !== undefined) {
    out.push('CPUQuota=', `CPUQuotaPeriodSec=${limits.cpuPeriodUs}us`);
  }
  if (limits.memoryBytes !== undefined) out.push(`MemoryMax=${limits.memoryBytes}`);
  return out;
}

const SYSTEMD_CALL_TIMEOUT_MS = 30_000;

/** Stops a unit and lets it go; one that is not loaded is already gone. */
async function stopUnit(unit: string): Promise<void> {
  await execChecked('systemctl', ['stop', unit], { timeoutMs: SYSTEMD_CALL_TIMEOUT_MS }).catch((err: Error) => {
    if (!/not loaded|not found/i.test(err.message)) throw err;
  });
}

/** sd_booted(3): systemd is PID 1 on this host. */
export function systemdBooted(root = '/run/systemd/system'): boolean {
  return existsSync(root);
}

/**
 * The driver for `[runtime] cgroup_driver`, or an error that says what to change. `auto` follows the
 * host, as the kubelet's own default does on a systemd host: a kubelet that takes its driver from the
 * runtime then matches. The systemd driver needs systemd as PID 1: without it every container would
 * fail, so skiffd refuses to start instead.
 */
export function cgroupDriver(name: CgroupDriverName | 'auto', booted: () => boolean = systemdBooted): CgroupDriver {
  if (name === 'auto') return booted() ? systemdDriver : cgroupfsDriver;
  if (name === 'cgroupfs') return cgroupfsDriver;
  if (!booted())
    throw new Error(
      '[runtime] cgroup_driver = "systemd" needs systemd as PID 1, and this host was not booted with systemd (no /run/systemd/system): ' +
        'set cgroup_driver = "cgroupfs", and cgroupDriver: cgroupfs in the kubelet configuration',
    );
  return systemdDriver;
}
