// CPU and memory limits written straight into a cgroup's files, for the pod-level cgroup that no OCI
// runtime owns (containers go through `runc update`). The same limits, spelled for v1 or v2.
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cgroupLayout, controllerDir, type CgroupLayout } from './layout.ts';

export interface CgroupLimits {
  /** Relative CPU weight in v1 shares (2..262144). */
  cpuShares?: number;
  /** CFS quota and period in microseconds; quota undefined means no cap. */
  cpuQuotaUs?: number;
  cpuPeriodUs?: number;
  memoryBytes?: number;
}

/** v1 shares to a v2 weight, the conversion runc and the kubelet use (integer division: 1024 is 39). */
export function sharesToWeight(shares: number): number {
  return 1 + Math.floor(((shares - 2) * 9999) / 262142);
}

/** Writes the limits, making the cgroup if it is not there yet; a controller this host lacks is an error naming it. */
export async function writeLimits(cgroupPath: string, limits: CgroupLimits, layout: CgroupLayout = cgroupLayout()): Promise<void> {
  const files: [controller: string, file: string, value: string][] = [];
  const v2 = layout.mode === 'v2';
  if (limits.cpuShares !== undefined)
    files.push(v2 ? ['cpu', 'cpu.weight', String(sharesToWeight(limits.cpuShares))] : ['cpu', 'cpu.shares', String(limits.cpuShares)]);
  if (limits.cpuPeriodUs !== undefined || limits.cpuQuotaUs !== undefined) {
    const period = limits.cpuPeriodUs ?? 100_000;
    if (v2) files.push(['cpu', 'cpu.max', `${limits.cpuQuotaUs ?? 'max'} ${period}`]);
    else files.push(['cpu', 'cpu.cfs_period_us', String(period)], ['cpu', 'cpu.cfs_quota_us', String(limits.cpuQuotaUs ?? -1)]);
  }
  if (limits.memoryBytes !== undefined)
    files.push(v2 ? ['memory', 'memory.max', String(limits.memoryBytes)] : ['memory', 'memory.limit_in_bytes', String(limits.memoryBytes)]);
  for (const [controller, file, value] of files) {
    const dir = controllerDir(controller, cgroupPath, layout);
    if (!dir) throw new Error(`this host has no ${controller} cgroup controller`);
    // A pod's cgroup appears with its first container; limits set before that make it now.
    if (!existsSync(dir)) await mkdir(dir, { recursive: true });
    await writeFile(join(dir, file), value);
  }
}
