// Applies plugins' merged adjustment to a container's OCI spec, the way containerd 2.1 applies it
// (containerd/nri's spec generator): annotations, environment, hooks, CDI devices, devices with
// their cgroup rules, cgroups path, OOM score, resources, RDT class, mounts (then ordered by
// depth), rlimits. A "-" marked key removes what the image or the CRI config put there.
import type { ContainerAdjustment, Hook, LinuxDevice } from '../../../proto/gen/nri/v1alpha1/api.ts';
import type { OciDevice, OciHook, OciHooks, OciMount, OciSpec } from '../oci/spec.ts';
import { markedForRemoval } from './merge.ts';

export class AdjustmentError extends Error {
  override name = 'AdjustmentError';
}

/** A bigint as a JSON number when exact, else kept as bigint (written exactly). */
const num = (v: bigint): number | bigint => (v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v);
const safe = (v: bigint, what: string): number => {
  const n = num(v);
  if (typeof n !== 'number') throw new AdjustmentError(`${what} ${v} is out of range`);
  return n;
};

export interface AdjustOptions {
  /** Applies CDI devices by name (throws when one is unknown). */
  injectCdiDevices(spec: OciSpec, names: string[]): void;
}

export function adjustSpec(spec: OciSpec, a: ContainerAdjustment, options: AdjustOptions): void {
  adjustAnnotations(spec, a.annotations);
  adjustEnv(spec, a);
  if (a.hooks) adjustHooks(spec, a.hooks);
  if (a.CDIDevices.length > 0)
    options.injectCdiDevices(
      spec,
      a.CDIDevices.map((d) => d.name),
    );
  const linux = a.linux;
  if (linux) {
    adjustDevices(spec, linux.devices);
    if (linux.cgroupsPath) spec.linux.cgroupsPath = checkedCgroupsPath(linux.cgroupsPath);
    if (linux.oomScoreAdj) spec.process.oomScoreAdj = safe(linux.oomScoreAdj.value, 'OOM score adjustment');
    const r = linux.resources;
    if (r) {
      const res = (spec.linux.resources ??= {});
      const cpu = r.cpu;
      if (cpu) {
        const c = (res.cpu ??= {});
        if (cpu.period) c.period = safe(cpu.period.value, 'CPU period');
        if (cpu.quota) c.quota = safe(cpu.quota.value, 'CPU quota');
        if (cpu.shares) c.shares = safe(cpu.shares.value, 'CPU shares');
        if (cpu.cpus) c.cpus = cpu.cpus;
        if (cpu.mems) c.mems = cpu.mems;
        if (cpu.realtimeRuntime) c.realtimeRuntime = safe(cpu.realtimeRuntime.value, 'CPU realtime runtime');
        if (cpu.realtimePeriod) c.realtimePeriod = safe(cpu.realtimePeriod.value, 'CPU realtime period');
      }
      const limit = r.memory?.limit?.value;
      if (limit !== undefined && limit !== 0n) {
        // As containerd does: the swap limit follows the memory limit (no swap on top).
        const m = (res.memory ??= {});
        m.limit = safe(limit, 'memory limit');
        m.swap = m.limit;
      }
      for (const h of r.hugepageLimits) {
        res.hugepageLimits = [...(res.hugepageLimits ?? []).filter((x) => x.pageSize !== h.pageSize), { pageSize: h.pageSize, limit: num(h.limit) }];
      }
      if (Object.keys(r.unified).length > 0) res.unified = { ...res.unified, ...r.unified };
      if (r.pids) res.pids = { limit: safe(r.pids.limit, 'pids limit') };
      if (r.blockioClass?.value) throw new AdjustmentError(`block I/O class "${r.blockioClass.value}": no block I/O classes are configured on this node`);
      if (r.rdtClass) {
        if (r.rdtClass.value) spec.linux.intelRdt = { closID: r.rdtClass.value };
        else delete spec.linux.intelRdt;
      }
    }
  }
  adjustMounts(spec, a.mounts);
  for (const l of a.rlimits) (spec.process.rlimits ??= []).push({ type: l.type, hard: num(l.hard), soft: num(l.soft) });
}

/**
 * A plugin's cgroups path, in one of the forms runc takes: an absolute path (cgroupfs) or
 * slice:prefix:name (systemd). "." and ".." are refused: skiffd reads the container's stats there,
 * and a path that climbs out of the cgroup hierarchy would have it read files anywhere.
 */
function checkedCgroupsPath(path: string): string {
  const systemd = /^[^:/]*:[^:/]+:[^:/]+$/.test(path);
  const parts = systemd ? path.split(':') : path.split('/');
  if ((!systemd && !path.startsWith('/')) || parts.some((p) => p === '.' || p === '..'))
    throw new AdjustmentError(`cgroups path "${path}" is neither an absolute path without "." or ".." nor slice:prefix:name`);
  return path;
}

function adjustAnnotations(spec: OciSpec, annotations: Record<string, string>): void {
  for (const [k, v] of Object.entries(annotations)) {
    const { key, marked } = markedForRemoval(k);
    if (marked) {
      if (spec.annotations) delete spec.annotations[key];
    } else (spec.annotations ??= {})[k] = v;
  }
}

/** Set variables replace the spec's in place; new ones go last, in the plugins' order. */
function adjustEnv(spec: OciSpec, a: ContainerAdjustment): void {
  if (a.env.length === 0) return;
  const mod = new Map<string, { key: string; value: string }>();
  for (const e of a.env) mod.set(markedForRemoval(e.key).key, e);
  const env: string[] = [];
  for (const entry of spec.process.env) {
    const eq = entry.indexOf('=');
    if (eq < 0) continue;
    const name = entry.slice(0, eq);
    const m = mod.get(name);
    if (m) {
      mod.delete(name);
      if (!markedForRemoval(m.key).marked) setEnv(env, m.key, m.value);
      continue;
    }
    setEnv(env, name, entry.slice(eq + 1));
  }
  for (const e of a.env) if (!markedForRemoval(e.key).marked && mod.has(e.key)) setEnv(env, e.key, e.value);
  spec.process.env = env;
}

function setEnv(env: string[], key: string, value: string): void {
  const i = env.findIndex((e) => e.startsWith(`${key}=`));
  if (i >= 0) env[i] = `${key}=${value}`;
  else env.push(`${key}=${value}`);
}

function ociHook(h: Hook): OciHook {
  return {
    path: h.path,
    ...(h.args.length > 0 ? { args: h.args } : {}),
    ...(h.env.length > 0 ? { env: h.env } : {}),
    ...(h.timeout ? { timeout: Number(h.timeout.value) } : {}),
  };
}

function adjustHooks(spec: OciSpec, hooks: NonNullable<ContainerAdjustment['hooks']>): void {
  const kinds = ['prestart', 'poststart', 'poststop', 'createRuntime', 'createContainer', 'startContainer'] as const;
  for (const kind of kinds) {
    if (hooks[kind].length === 0) continue;
    const all: OciHooks = (spec.hooks ??= {});
    all[kind] = [...(all[kind] ?? []), ...hooks[kind].map(ociHook)];
  }
}

const DEVICE_TYPES = new Set(['c', 'b', 'u', 'p']);

function adjustDevices(spec: OciSpec, devices: LinuxDevice[]): void {
  for (const d of devices) {
    const { key, marked } = markedForRemoval(d.path);
    spec.linux.devices = (spec.linux.devices ?? []).filter((x) => x.path !== key);
    if (marked) continue;
    if (!DEVICE_TYPES.has(d.type)) throw new AdjustmentError(`device ${d.path}: type "${d.type}" is not one of c, b, u, p`);
    const device: OciDevice = {
      path: d.path,
      type: d.type as OciDevice['type'],
      major: safe(d.major, `device ${d.path} major`),
      minor: safe(d.minor, `device ${d.path} minor`),
      ...(d.fileMode ? { fileMode: d.fileMode.value } : {}),
      ...(d.uid ? { uid: d.uid.value } : {}),
      ...(d.gid ? { gid: d.gid.value } : {}),
    };
    spec.linux.devices.push(device);
    const res = (spec.linux.resources ??= {});
    (res.devices ??= []).push({ allow: true, type: d.type, major: device.major, minor: device.minor, access: d.type === 'b' ? 'rwm' : 'rw' });
  }
}

function adjustMounts(spec: OciSpec, mounts: ContainerAdjustment['mounts']): void {
  if (mounts.length === 0) return;
  for (const m of mounts) {
    const { key, marked } = markedForRemoval(m.destination);
    spec.mounts = spec.mounts.filter((x) => x.destination !== key);
    if (marked) continue;
    const mount: OciMount = { destination: m.destination, type: m.type, source: m.source, options: [...m.options] };
    const propagation = m.options.find((o) => o === 'rprivate' || o === 'rshared' || o === 'rslave');
    if (propagation === 'rshared') spec.linux.rootfsPropagation = 'rshared';
    else if (propagation === 'rslave' && spec.linux.rootfsPropagation !== 'rshared' && spec.linux.rootfsPropagation !== 'rslave')
      spec.linux.rootfsPropagation = 'rslave';
    spec.mounts.push(mount);
  }
  // Parents before what is mounted beneath them: by depth, then by destination.
  const depth = (p: string) => p.replace(/\/+$/, '').split('/').length - 1;
  spec.mounts.sort((a, b) => depth(a.destination) - depth(b.destination) || (a.destination < b.destination ? -1 : a.destination > b.destination ? 1 : 0));
}
