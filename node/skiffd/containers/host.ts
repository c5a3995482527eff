// Facts about the host the spec builder needs, read once, and host device lookups.
import { existsSync, readFileSync, readdirSync, lstatSync, statSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { cgroupLayout, hasController } from '../cgroups/layout.ts';
import { cgroupfsDriver, type CgroupDriver } from '../cgroups/driver.ts';
import type { OciDevice } from '../oci/spec.ts';
import type { HostFacts, ResolvedDevice } from './spec-builder.ts';
import type { Device } from '../../../proto/gen/runtime/v1/api.ts';
import { invalidArgument } from './errors.ts';
import { ALL_CAPABILITIES, capabilitiesFromMask } from '../confinement/capabilities.ts';

export function readHostFacts(defaultCgroupParent: string, cgroups: CgroupDriver = cgroupfsDriver): HostFacts {
  const num = (file: string, fallback: number) => {
    try {
      const n = Number.parseInt(readFileSync(file, 'utf8').trim(), 10);
      return Number.isFinite(n) ? n : fallback;
    } catch {
      return fallback;
    }
  };
  const layout = cgroupLayout();
  const memory = layout.v1.get('memory');
  return {
    daemonOomScoreAdj: num('/proc/self/oom_score_adj', 0),
    capabilities: boundingCapabilities(),
    cgroupMode: layout.mode,
    swapAccounting: layout.mode !== 'v2' && !!memory && existsSync(join(memory.mountPoint, 'memory.memsw.limit_in_bytes')),
    hugetlb: hasController('hugetlb', layout),
    defaultCgroupParent,
    cgroups,
  };
}

function boundingCapabilities(): string[] {
  try {
    const m = /^CapBnd:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m) return capabilitiesFromMask(m[1]);
  } catch {
    /* fall through */
  }
  return [...ALL_CAPABILITIES];
}

function deviceOf(path: string): OciDevice | undefined {
  const st = statSync(path);
  const type = st.isCharacterDevice() ? 'c' : st.isBlockDevice() ? 'b' : undefined;
  if (!type) return undefined;
  const rdev = st.rdev;
  const major = ((rdev >> 8) & 0xfff) | (Math.floor(rdev / 2 ** 32) & ~0xfff);
  const minor = (rdev & 0xff) | ((rdev >> 12) & 0xfff00);
  return { type, path, major, minor, fileMode: st.mode & 0o7777, uid: st.uid, gid: st.gid };
}

/** CRI devices -> OCI devices; a directory host path brings every device under it. */
export function resolveDevices(devices: Device[]): ResolvedDevice[] {
  const out: ResolvedDevice[] = [];
  devices.forEach((d, i) => {
    const field = `config.devices[${i}]`;
    if (!d.containerPath.startsWith('/')) throw invalidArgument(`${field}.container_path`, `"${d.containerPath}" is not absolute`);
    if (d.permissions && !/^[rwm]+$/.test(d.permissions)) throw invalidArgument(`${field}.permissions`, `"${d.permissions}" is not a combination of r, w, m`);
    let host: string;
    try {
      host = realpathSync(d.hostPath);
    } catch {
      throw invalidArgument(`${field}.host_path`, `${d.hostPath} does not exist`);
    }
    if (statSync(host).isDirectory()) {
      for (const dev of walkDevices(host)) {
        out.push({ ...dev, path: join(d.containerPath, dev.path.slice(host.length)), permissions: d.permissions || 'rwm' });
      }
      return;
    }
    const dev = deviceOf(host);
    if (!dev) throw invalidArgument(`${field}.host_path`, `${d.hostPath} is not a device`);
    out.push({ ...dev, path: d.containerPath, permissions: d.permissions || 'rwm' });
  });
  return out;
}

function walkDevices(dir: string): OciDevice[] {
  const out: OciDevice[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of names) {
    const p = join(dir, name);
    let st;
    try {
      st = lstatSync(p);
    } catch {
      continue;
    }
    if (st.isDirectory()) {
      if (dir === '/dev' && ['pts', 'shm', 'mqueue', 'fd'].includes(name)) continue;
      out.push(...walkDevices(p));
    } else if (st.isCharacterDevice() || st.isBlockDevice()) {
      try {
        const dev = deviceOf(p);
        if (dev) out.push(dev);
      } catch {
        /* vanished */
      }
    }
  }
  return out;
}

/** Every device node under /dev, for privileged containers. */
export function hostDevices(): OciDevice[] {
  return walkDevices('/dev').filter((d) => d.path !== '/dev/console' && !d.path.startsWith('/dev/tty') && d.path !== '/dev/ptmx');
}
