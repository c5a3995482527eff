// Pressure stall information (PSI) of one cgroup: how long its tasks waited for CPU, memory and I/O.
// Read on a cgroup v2 host only. A hybrid host's unified tree has the pressure files too, but
// containerd (whose shim reports cgroup v1 metrics there) and cAdvisor (the kubelet's own reader) both
// leave PSI out on such a host, and the kubelet documents PSI as a cgroup v2 feature: so does skiffd.
import { join } from 'node:path';
import { readText } from './files.ts';
import { cgroupLayout, unifiedDir, type CgroupLayout } from './layout.ts';

/** One line of a pressure file. */
export interface PressureLine {
  /** Share of wall time stalled over the last 10, 60 and 300 seconds, in percent. */
  avg10: number;
  avg60: number;
  avg300: number;
  /** Cumulative stall time, microseconds (the kernel's unit). */
  totalUs: bigint;
}

/** `some`: at least one task stalled; `full`: all non-idle tasks stalled at once. */
export interface Pressure {
  some?: PressureLine;
  full?: PressureLine;
}

export interface CgroupPressure {
  cpu?: Pressure;
  memory?: Pressure;
  io?: Pressure;
}

const LINE = /^(some|full) avg10=(\d+\.\d+) avg60=(\d+\.\d+) avg300=(\d+\.\d+) total=(\d+)$/;

/** A cpu.pressure, memory.pressure or io.pressure file (or /proc/pressure/*); undefined if it has no line. */
export function parsePressure(text: string): Pressure | undefined {
  const out: Pressure = {};
  for (const line of text.split('\n')) {
    const m = LINE.exec(line.trim());
    if (!m) continue;
    out[m[1] as 'some' | 'full'] = { avg10: Number(m[2]), avg60: Number(m[3]), avg300: Number(m[4]), totalUs: BigInt(m[5]) };
  }
  return out.some || out.full ? out : undefined;
}

/** undefined when the host is not on cgroup v2, or the cgroup is gone or has PSI turned off. */
export async function readPressure(cgroupPath: string, layout: CgroupLayout = cgroupLayout()): Promise<CgroupPressure | undefined> {
  if (layout.mode !== 'v2') return undefined;
  const dir = unifiedDir(cgroupPath, layout);
  if (!dir) return undefined;
  const [cpu, memory, io] = await Promise.all(['cpu', 'memory', 'io'].map((r) => readText(join(dir, `${r}.pressure`))));
  const out: CgroupPressure = {
    cpu: cpu === undefined ? undefined : parsePressure(cpu),
    memory: memory === undefined ? undefined : parsePressure(memory),
    io: io === undefined ? undefined : parsePressure(io),
  };
  return out.cpu || out.memory || out.io ? out : undefined;
}
