// Block I/O of one cgroup, per device: bytes and operations read and written. v2 counts them in
// io.stat; v1 in the blkio controller's throttle files (kept whatever the I/O scheduler), recursive so
// that a pod's cgroup includes its containers'. Device names are resolved the way cAdvisor names them.
import { join } from 'node:path';
import { readText } from './files.ts';
import { cgroupLayout, controllerDir, type CgroupLayout } from './layout.ts';

export interface DeviceIo {
  major: number;
  minor: number;
  readBytes: bigint;
  writeBytes: bigint;
  reads: bigint;
  writes: bigint;
}

function entry(devices: Map<string, DeviceIo>, dev: string): DeviceIo | undefined {
  const m = /^(\d+):(\d+)$/.exec(dev);
  if (!m) return undefined;
  let d = devices.get(dev);
  if (!d) {
    d = { major: Number(m[1]), minor: Number(m[2]), readBytes: 0n, writeBytes: 0n, reads: 0n, writes: 0n };
    devices.set(dev, d);
  }
  return d;
}

/** cgroup v2 io.stat: `MAJ:MIN rbytes=N wbytes=N rios=N wios=N dbytes=N dios=N` per device. */
export function parseIoStat(text: string): DeviceIo[] {
  const devices = new Map<string, DeviceIo>();
  for (const line of text.split('\n')) {
    const [dev, ...fields] = line.trim().split(/\s+/);
    const d = dev ? entry(devices, dev) : undefined;
    if (!d) continue;
    for (const f of fields) {
      const [key, value] = f.split('=');
      if (!value || !/^\d+$/.test(value)) continue;
      if (key === 'rbytes') d.readBytes = BigInt(value);
      else if (key === 'wbytes') d.writeBytes = BigInt(value);
      else if (key === 'rios') d.reads = BigInt(value);
      else if (key === 'wios') d.writes = BigInt(value);
    }
  }
  return [...devices.values()];
}

/** cgroup v1 blkio.*io_service_bytes* and blkio.*io_serviced*: `MAJ:MIN Read N` lines, and a `Total N`. */
export function parseBlkio(bytesText: string, opsText: string): DeviceIo[] {
  const devices = new Map<string, DeviceIo>();
  const scan = (text: string, read: 'readBytes' | 'reads', write: 'writeBytes' | 'writes') => {
    for (const line of text.split('\n')) {
      const [dev, op, value] = line.trim().split(/\s+/);
      if (!value || !/^\d+$/.test(value) || (op !== 'Read' && op !== 'Write')) continue;
      const d = entry(devices, dev);
      if (d) d[op === 'Read' ? read : write] = BigInt(value);
    }
  };
  scan(bytesText, 'readBytes', 'writeBytes');
  scan(opsText, 'reads', 'writes');
  return [...devices.values()];
}

/** undefined when the cgroup or the host's I/O controller is not there. */
export async function readIo(cgroupPath: string, layout: CgroupLayout = cgroupLayout()): Promise<DeviceIo[] | undefined> {
  if (layout.mode === 'v2') {
    const dir = controllerDir('io', cgroupPath, layout);
    const text = dir === undefined ? undefined : await readText(join(dir, 'io.stat'));
    return text === undefined ? undefined : parseIoStat(text);
  }
  const dir = controllerDir('blkio', cgroupPath, layout);
  if (!dir) return undefined;
  const [bytes, ops] = await Promise.all([
    readText(join(dir, 'blkio.throttle.io_service_bytes_recursive')),
    readText(join(dir, 'blkio.throttle.io_serviced_recursive')),
  ]);
  return bytes === undefined || ops === undefined ? undefined : parseBlkio(bytes, ops);
}

const names = new Map<string, string>();

/**
 * `/dev/NAME` of a block device, as cAdvisor labels it (from the kernel's uevent for the device), or
 * `MAJ:MIN` when the kernel does not name it.
 */
export async function blockDeviceName(major: number, minor: number, sysDevBlock = '/sys/dev/block'): Promise<string> {
  const key = `${major}:${minor}`;
  const known = names.get(key);
  if (known) return known;
  const uevent = await readText(join(sysDevBlock, key, 'uevent')).catch(() => undefined);
  const devname = uevent && /^DEVNAME=(.+)$/m.exec(uevent)?.[1];
  const name = devname ? `/dev/${devname}` : key;
  if (devname) names.set(key, name);
  return name;
}
