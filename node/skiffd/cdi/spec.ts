// A CDI spec file (Container Device Interface, cncf-tags/container-device-interface): one vendor's class
// of devices and the edits each makes to a container. Read from JSON or YAML, checked as the spec's own
// validation does: the kind `vendor/class`, device names, the version each field needs, every edit's shape.
import { parse as parseYaml } from 'yaml';

export const SPEC_VERSIONS = ['0.3.0', '0.4.0', '0.5.0', '0.6.0', '0.7.0', '0.8.0', '1.0.0'] as const;

export interface CdiDeviceNode {
  path: string;
  hostPath?: string;
  type?: 'c' | 'b' | 'p' | 'u';
  major?: number;
  minor?: number;
  fileMode?: number;
  permissions?: string;
  uid?: number;
  gid?: number;
}

export interface CdiMount {
  hostPath: string;
  containerPath: string;
  type?: string;
  options?: string[];
}

export const HOOK_NAMES = ['prestart', 'createRuntime', 'createContainer', 'startContainer', 'poststart', 'poststop'] as const;
export type HookName = (typeof HOOK_NAMES)[number];

export interface CdiHook {
  hookName: HookName;
  path: string;
  args?: string[];
  env?: string[];
  timeout?: number;
}

export interface ContainerEdits {
  env?: string[];
  deviceNodes?: CdiDeviceNode[];
  mounts?: CdiMount[];
  hooks?: CdiHook[];
  additionalGids?: number[];
  intelRdt?: { closID?: string; l3CacheSchema?: string; memBwSchema?: string; schemata?: string[]; enableMonitoring?: boolean };
}

export interface CdiDevice {
  name: string;
  annotations?: Record<string, string>;
  containerEdits: ContainerEdits;
}

export interface CdiSpec {
  cdiVersion: string;
  /** `vendor.com/class` */
  kind: string;
  annotations?: Record<string, string>;
  devices: CdiDevice[];
  containerEdits?: ContainerEdits;
}

export class CdiSpecError extends Error {
  override name = 'CdiSpecError';
}

// The spec's grammar: a vendor is a domain-like name, a class and a device name letters, digits and a few marks.
const VENDOR = /^[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$/;
const CLASS = /^[A-Za-z](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?$/;
const DEVICE = /^[A-Za-z0-9](?:[A-Za-z0-9_.:-]*[A-Za-z0-9])?$/;

/** `vendor.com/class=name` split, or why it is not one. */
export function parseQualifiedName(name: string): { kind: string; device: string } | string {
  const eq = name.indexOf('=');
  if (eq < 0) return `"${name}" is not a qualified CDI device name (vendor.com/class=name)`;
  const kind = name.slice(0, eq);
  const device = name.slice(eq + 1);
  const kindProblem = checkKind(kind);
  if (kindProblem) return `"${name}": ${kindProblem}`;
  if (!DEVICE.test(device)) return `"${name}": "${device}" is not a valid device name`;
  return { kind, device };
}

function checkKind(kind: string): string | undefined {
  const slash = kind.indexOf('/');
  if (slash < 0) return `the kind "${kind}" is not vendor.com/class`;
  const vendor = kind.slice(0, slash);
  const cls = kind.slice(slash + 1);
  if (!VENDOR.test(vendor)) return `"${vendor}" is not a valid vendor name`;
  if (!CLASS.test(cls)) return `"${cls}" is not a valid class name`;
  return undefined;
}

const versionAtLeast = (v: string, min: string) => SPEC_VERSIONS.indexOf(v as never) >= SPEC_VERSIONS.indexOf(min as never);

/** Parses and checks one spec file's text; throws CdiSpecError saying what is wrong where. */
export function parseSpec(text: string, file: string): CdiSpec {
  let doc: unknown;
  try {
    // JSON is YAML; the YAML parser reads both, with one error style.
    doc = file.endsWith('.json') ? JSON.parse(text) : parseYaml(text, { maxAliasCount: 100 });
  } catch (err) {
    throw new CdiSpecError(`${file}: not valid ${file.endsWith('.json') ? 'JSON' : 'YAML'}: ${(err as Error).message.split('\n')[0]}`);
  }
  const at = (path: string, why: string) => new CdiSpecError(`${file}: ${path}: ${why}`);
  if (!isObject(doc)) throw at('(top)', 'a spec is an object with cdiVersion, kind and devices');
  const version = doc.cdiVersion;
  if (typeof version !== 'string' || !(SPEC_VERSIONS as readonly string[]).includes(version))
    throw at('cdiVersion', `${JSON.stringify(version)} is not a CDI version this runtime reads (${SPEC_VERSIONS.join(', ')})`);
  if (typeof doc.kind !== 'string') throw at('kind', 'missing');
  const kindProblem = checkKind(doc.kind);
  if (kindProblem) throw at('kind', kindProblem);
  if (doc.annotations !== undefined) {
    if (!versionAtLeast(version, '0.6.0')) throw at('annotations', `needs cdiVersion 0.6.0 or later (the file says ${version})`);
    checkStringMap(doc.annotations, 'annotations', at);
  }
  if (!Array.isArray(doc.devices) || doc.devices.length === 0) throw at('devices', 'a spec names at least one device');
  const names = new Set<string>();
  const devices = doc.devices.map((d: unknown, i: number): CdiDevice => {
    const path = `devices[${i}]`;
    if (!isObject(d)) throw at(path, 'not an object');
    if (typeof d.name !== 'string' || !DEVICE.test(d.name)) throw at(`${path}.name`, `${JSON.stringify(d.name)} is not a valid device name`);
    if (names.has(d.name)) throw at(`${path}.name`, `the device "${d.name}" is named twice`);
    names.add(d.name);
    if (d.annotations !== undefined) {
      if (!versionAtLeast(version, '0.6.0')) throw at(`${path}.annotations`, `needs cdiVersion 0.6.0 or later (the file says ${version})`);
      checkStringMap(d.annotations, `${path}.annotations`, at);
    }
    const edits = checkEdits(d.containerEdits, `${path}.containerEdits`, version, at);
    if (!edits || isEmptyEdits(edits)) throw at(`${path}.containerEdits`, 'a device must make at least one edit');
    return { name: d.name, ...(d.annotations ? { annotations: d.annotations as Record<string, string> } : {}), containerEdits: edits };
  });
  const edits = doc.containerEdits === undefined ? undefined : checkEdits(doc.containerEdits, 'containerEdits', version, at);
  return {
    cdiVersion: version,
    kind: doc.kind,
    ...(doc.annotations ? { annotations: doc.annotations as Record<string, string> } : {}),
    devices,
    ...(edits ? { containerEdits: edits } : {}),
  };
}

type At = (path: string, why: string) => CdiSpecError;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isEmptyEdits(e: ContainerEdits): boolean {
  return !e.env?.length && !e.deviceNodes?.length && !e.mounts?.length && !e.hooks?.length && !e.additionalGids?.length && !e.intelRdt;
}

function checkStringMap(v: unknown, path: string, at: At): void {
  if (!isObject(v) || Object.values(v).some((x) => typeof x !== 'string')) throw at(path, 'a map of strings');
}

/** A list of objects, each read by `each` with its own path (`LIST[i]`). */
function objects<T>(v: unknown, path: string, at: At, each: (o: Record<string, unknown>, p: string) => T): T[] {
  if (!Array.isArray(v)) throw at(path, 'a list');
  return v.map((o: unknown, i: number) => {
    const p = `${path}[${i}]`;
    if (!isObject(o)) throw at(p, 'not an object');
    return each(o, p);
  });
}

function strings(v: unknown, path: string, at: At): string[] {
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw at(path, 'a list of strings');
  return v as string[];
}

function uint(v: unknown, path: string, at: At, max = 0xffffffff): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > max) throw at(path, `${JSON.stringify(v)} is not a whole number from 0 to ${max}`);
  return v;
}

function absolute(v: unknown, path: string, at: At): string {
  if (typeof v !== 'string' || !v.startsWith('/')) throw at(path, `${JSON.stringify(v)} is not an absolute path`);
  return v;
}

function checkEdits(v: unknown, path: string, version: string, at: At): ContainerEdits | undefined {
  if (v === undefined) return undefined;
  if (!isObject(v)) throw at(path, 'not an object');
  const out: ContainerEdits = {};
  if (v.env !== undefined) {
    out.env = strings(v.env, `${path}.env`, at);
    for (const [i, e] of out.env.entries()) if (!e.includes('=') || e.startsWith('=')) throw at(`${path}.env[${i}]`, `"${e}" is not NAME=VALUE`);
  }
  if (v.deviceNodes !== undefined) {
    out.deviceNodes = objects(v.deviceNodes, `${path}.deviceNodes`, at, (n, p) => {
      const node: CdiDeviceNode = { path: absolute(n.path, `${p}.path`, at) };
      if (n.hostPath !== undefined) node.hostPath = absolute(n.hostPath, `${p}.hostPath`, at);
      if (n.type !== undefined) {
        if (n.type !== 'c' && n.type !== 'b' && n.type !== 'p' && n.type !== 'u') throw at(`${p}.type`, `${JSON.stringify(n.type)} is not c, b, u or p`);
        node.type = n.type;
      }
      if (n.major !== undefined) node.major = uint(n.major, `${p}.major`, at);
      if (n.minor !== undefined) node.minor = uint(n.minor, `${p}.minor`, at);
      if (n.fileMode !== undefined) node.fileMode = uint(n.fileMode, `${p}.fileMode`, at, 0o7777);
      if (n.permissions !== undefined) {
        // "none": the node is made, and the device cgroup lets nothing through to it.
        const perms = n.permissions;
        const ok = typeof perms === 'string' && (perms === 'none' || (/^[rwm]{1,3}$/.test(perms) && new Set(perms).size === perms.length));
        if (!ok) throw at(`${p}.permissions`, `${JSON.stringify(perms)} is not some of r, w and m, or "none"`);
        node.permissions = perms;
      }
      if (n.uid !== undefined) node.uid = uint(n.uid, `${p}.uid`, at);
      if (n.gid !== undefined) node.gid = uint(n.gid, `${p}.gid`, at);
      return node;
    });
  }
  if (v.mounts !== undefined) {
    out.mounts = objects(v.mounts, `${path}.mounts`, at, (m, p) => {
      const mount: CdiMount = { hostPath: absolute(m.hostPath, `${p}.hostPath`, at), containerPath: absolute(m.containerPath, `${p}.containerPath`, at) };
      if (m.type !== undefined) {
        if (typeof m.type !== 'string' || !m.type) throw at(`${p}.type`, 'a filesystem type');
        mount.type = m.type;
      }
      if (m.options !== undefined) mount.options = strings(m.options, `${p}.options`, at);
      return mount;
    });
  }
  if (v.hooks !== undefined) {
    out.hooks = objects(v.hooks, `${path}.hooks`, at, (h, p) => {
      if (typeof h.hookName !== 'string' || !(HOOK_NAMES as readonly string[]).includes(h.hookName))
        throw at(`${p}.hookName`, `${JSON.stringify(h.hookName)} is not one of ${HOOK_NAMES.join(', ')}`);
      const hook: CdiHook = { hookName: h.hookName as HookName, path: absolute(h.path, `${p}.path`, at) };
      if (h.args !== undefined) hook.args = strings(h.args, `${p}.args`, at);
      if (h.env !== undefined) hook.env = strings(h.env, `${p}.env`, at);
      if (h.timeout !== undefined) {
        hook.timeout = uint(h.timeout, `${p}.timeout`, at);
        if (hook.timeout === 0) throw at(`${p}.timeout`, 'a timeout is at least 1 second');
      }
      return hook;
    });
  }
  if (v.additionalGids !== undefined) {
    if (!versionAtLeast(version, '0.7.0')) throw at(`${path}.additionalGids`, `needs cdiVersion 0.7.0 or later (the file says ${version})`);
    if (!Array.isArray(v.additionalGids)) throw at(`${path}.additionalGids`, 'a list of group IDs');
    out.additionalGids = v.additionalGids.map((g: unknown, i: number) => uint(g, `${path}.additionalGids[${i}]`, at));
    if (out.additionalGids.includes(0)) throw at(`${path}.additionalGids`, 'group 0 cannot be added');
  }
  if (v.intelRdt !== undefined) {
    if (!versionAtLeast(version, '0.7.0')) throw at(`${path}.intelRdt`, `needs cdiVersion 0.7.0 or later (the file says ${version})`);
    if (!isObject(v.intelRdt)) throw at(`${path}.intelRdt`, 'not an object');
    const r = v.intelRdt;
    for (const key of ['closID', 'l3CacheSchema', 'memBwSchema'] as const)
      if (r[key] !== undefined && typeof r[key] !== 'string') throw at(`${path}.intelRdt.${key}`, 'a string');
    if (r.schemata !== undefined) strings(r.schemata, `${path}.intelRdt.schemata`, at);
    if (r.enableMonitoring !== undefined && typeof r.enableMonitoring !== 'boolean') throw at(`${path}.intelRdt.enableMonitoring`, 'true or false');
    out.intelRdt = r as ContainerEdits['intelRdt'];
  }
  return out;
}
