// Applies CDI devices to a container's OCI spec, in the order asked: for each device its spec's
// container edits, then the device's own. Device nodes go into the spec's device list, and character and
// block devices into the device cgroup's allow list (runc turns that into rules, or an eBPF program on
// cgroup v2); numbers a node does not give are read from the host's device file.
import { statSync } from 'node:fs';
import type { OciDevice, OciMount, OciSpec } from '../oci/spec.ts';
import type { FoundDevice } from './registry.ts';
import type { CdiDeviceNode, ContainerEdits, HookName } from './spec.ts';

export class CdiApplyError extends Error {
  override name = 'CdiApplyError';
}

export interface OciHook {
  path: string;
  args?: string[];
  env?: string[];
  timeout?: number;
}

/** The OCI spec as CDI edits it: hooks and Intel RDT are parts the spec builder leaves out. */
export type CdiEditableSpec = OciSpec & { hooks?: Partial<Record<HookName, OciHook[]>>; linux: OciSpec['linux'] & { intelRdt?: unknown } };

/** Linux's dev_t split (glibc's major()/minor()). */
function splitRdev(rdev: number): { major: number; minor: number } {
  const hi = Math.floor(rdev / 2 ** 32);
  const lo = rdev % 2 ** 32;
  return { major: ((lo >>> 8) & 0xfff) | (hi & ~0xfff), minor: (lo & 0xff) | ((lo >>> 12) & ~0xff) };
}

function resolveNode(node: CdiDeviceNode, from: string): OciDevice & { access: string } {
  let { type, major, minor } = node;
  if (type === undefined || (type !== 'p' && (major === undefined || minor === undefined))) {
    const hostPath = node.hostPath ?? node.path;
    let st;
    try {
      st = statSync(hostPath);
    } catch (err) {
      throw new CdiApplyError(
        `${from}: the device node ${node.path} gives no numbers and the host's ${hostPath} cannot be read: ${(err as NodeJS.ErrnoException).code ?? err}`,
      );
    }
    const hostType = st.isCharacterDevice() ? 'c' : st.isBlockDevice() ? 'b' : st.isFIFO() ? 'p' : undefined;
    if (!hostType) throw new CdiApplyError(`${from}: the host's ${hostPath} is not a device node`);
    type ??= hostType;
    if (type !== 'p' && (major === undefined || minor === undefined)) ({ major, minor } = splitRdev(st.rdev));
  }
  const device: OciDevice & { access: string } = {
    type: type === 'u' ? 'c' : type,
    path: node.path,
    major: major ?? 0,
    minor: minor ?? 0,
    access: node.permissions === 'none' ? '' : (node.permissions ?? 'rwm'),
  };
  if (node.fileMode !== undefined) device.fileMode = node.fileMode;
  if (node.uid !== undefined) device.uid = node.uid;
  if (node.gid !== undefined) device.gid = node.gid;
  return device;
}

const envName = (e: string) => e.slice(0, e.indexOf('='));

/**
 * Applies `devices` to `spec` in place, as the CDI reference library does (and so containerd and
 * CRI-O): a spec's own edits once, before the first of its devices; a variable set again takes its new
 * value where it stood (two GPUs of one kind each setting EXAMPLE_GPU leave the last one's); a device
 * node or mount at a path already taken replaces it. Throws CdiApplyError for a node it cannot resolve.
 */
export function applyCdiDevices(spec: CdiEditableSpec, devices: readonly FoundDevice[]): void {
  const seenEdits = new Set<ContainerEdits>();
  const hooks = (spec.hooks ??= {});
  let mounted = false;

  const apply = (edits: ContainerEdits | undefined, from: string) => {
    if (!edits || seenEdits.has(edits)) return;
    seenEdits.add(edits);
    for (const e of edits.env ?? []) {
      const at = spec.process.env.findIndex((x) => envName(x) === envName(e));
      if (at >= 0) spec.process.env[at] = e;
      else spec.process.env.push(e);
    }
    for (const node of edits.deviceNodes ?? []) {
      const { access, ...device } = resolveNode(node, from);
      // The container's user owns a node that names no owner (a root-owned node would be out of its reach).
      const { uid, gid } = spec.process.user;
      if (device.uid === undefined && uid > 0) device.uid = uid;
      if (device.gid === undefined && gid > 0) device.gid = gid;
      spec.linux.devices = [...(spec.linux.devices ?? []).filter((d) => d.path !== device.path), device];
      // A FIFO is a file, not a device: the device cgroup has no rule for it (runc takes b, c and a).
      if ((device.type === 'b' || device.type === 'c') && access !== '') {
        const resources = (spec.linux.resources ??= {});
        resources.devices = [...(resources.devices ?? []), { allow: true, type: device.type, major: device.major, minor: device.minor, access }];
      }
    }
    for (const m of edits.mounts ?? []) {
      const type = m.type ?? 'bind';
      const options = m.options ?? [];
      // runc makes a bind mount of a `bind` or `rbind` option, whatever the type says.
      const bindOptions = type === 'bind' && !options.some((o) => o === 'bind' || o === 'rbind') ? ['rbind', ...options] : options;
      const mount: OciMount = { destination: m.containerPath, source: m.hostPath, type, options: bindOptions };
      spec.mounts = [...spec.mounts.filter((x) => x.destination !== m.containerPath), mount];
      mounted = true;
    }
    for (const h of edits.hooks ?? []) {
      const hook: OciHook = {
        path: h.path,
        ...(h.args ? { args: h.args } : {}),
        ...(h.env ? { env: h.env } : {}),
        ...(h.timeout ? { timeout: h.timeout } : {}),
      };
      (hooks[h.hookName] ??= []).push(hook);
    }
    if (edits.additionalGids?.length) {
      const user = spec.process.user;
      user.additionalGids = [...new Set([...(user.additionalGids ?? []), ...edits.additionalGids.filter((g) => g !== 0)])];
    }
    if (edits.intelRdt) spec.linux.intelRdt = edits.intelRdt;
  };

  for (const d of devices) {
    apply(d.spec.containerEdits, `the spec of ${d.spec.kind} (${d.file})`);
    apply(d.device.containerEdits, `${d.name} (${d.file})`);
  }
  if (Object.keys(hooks).length === 0) delete spec.hooks;
  if (!mounted) return;
  // Parents before children, whatever order the edits came in.
  const depth = (p: string) => p.split('/').filter(Boolean).length;
  spec.mounts = spec.mounts
    .map((m, i) => ({ m, i }))
    .sort((a, b) => depth(a.m.destination) - depth(b.m.destination) || a.i - b.i)
    .map((x) => x.m);
}
