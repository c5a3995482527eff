// CPU, memory and process counts of one cgroup, from whichever cgroup version holds each controller.
// Working set follows the kubelet's definition: usage minus inactive file pages.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cgroupLayout, controllerDir, type CgroupLayout } from './layout.ts';

export interface CgroupCpu {
  /** Cumulative CPU time of all tasks, nanoseconds. */
  usageNs: bigint;
}

export interface CgroupMemory {
  usageBytes: bigint;
  workingSetBytes: bigint;
  rssBytes: bigint;
  pageFaults: bigint;
  majorPageFaults: bigint;
  /** undefined when unlimited. */
  limitBytes?: bigint;
}

async function readText(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENODEV' || code === 'EINVAL') return undefined;
    throw err;
  }
}

function parseFlatKeyed(text: string): Map<string, bigint> {
  const out = new Map<string, bigint>();
  for (const line of text.split('\n')) {
    const [key, value] = line.trim().split(/\s+/);
    if (key && value && /^\d+$/.test(value)) out.set(key, BigInt(value));
  }
  return out;
}

function isV2(controller: string, layout: CgroupLayout): boolean {
  return layout.mode === 'v2' || (!layout.v1.has(controller) && layout.unifiedControllers.has(controller));
}

/** undefined when the cgroup does not exist (yet). */
export async function readCpu(cgroupPath: string, layout: CgroupLayout = cgroupLayout()): Promise<CgroupCpu | undefined> {
  if (isV2('cpu', layout)) {
    const dir = controllerDir('cpu', cgroupPath, layout);
    const text = dir && (await readText(join(dir, 'cpu.stat')));
    const usec = text ? parseFlatKeyed(text).get('usage_usec') : undefined;
    return usec === undefined ? undefined : { usageNs: usec * 1000n };
  }
  const dir = controllerDir('cpuacct', cgroupPath, layout);
  const text = dir && (await readText(join(dir, 'cpuacct.usage')));
  return text && /^\d+/.test(text.trim()) ? { usageNs: BigInt(text.trim()) } : undefined;
}

// v1 reports "unlimited" as a huge page-aligned number.
const V1_UNLIMITED = 1n << 62n;

export async function readMemory(cgroupPath: string, layout: CgroupLayout = cgroupLayout()): Promise<CgroupMemory | undefined> {
  const dir = controllerDir('memory', cgroupPath, layout);
  if (!dir) return undefined;
  if (isV2('memory', layout)) {
    const [current, statText, max] = await Promise.all([
      readText(join(dir, 'memory.current')),
      readText(join(dir, 'memory.stat')),
      readText(join(dir, 'memory.max')),
    ]);
    if (current === undefined || statText === undefined) return undefined;
    const stat = parseFlatKeyed(statText);
    const usage = BigInt(current.trim());
    const inactive = stat.get('inactive_file') ?? 0n;
    return {
      usageBytes: usage,
      workingSetBytes: usage > inactive ? usage - inactive : 0n,
      rssBytes: stat.get('anon') ?? 0n,
      pageFaults: stat.get('pgfault') ?? 0n,
      majorPageFaults: stat.get('pgmajfault') ?? 0n,
      limitBytes: max && /^\d+$/.test(max.trim()) ? BigInt(max.trim()) : undefined,
    };
  }
  const [usageText, statText, limitText] = await Promise.all([
    readText(join(dir, 'memory.usage_in_bytes')),
    readText(join(dir, 'memory.stat')),
    readText(join(dir, 'memory.limit_in_bytes')),
  ]);
  if (usageText === undefined || statText === undefined) return undefined;
  const stat = parseFlatKeyed(statText);
  const usage = BigInt(usageText.trim());
  const inactive = stat.get('total_inactive_file') ?? 0n;
  const limit = limitText && /^\d+$/.test(limitText.trim()) ? BigInt(limitText.trim()) : undefined;
  return {
    usageBytes: usage,
    workingSetBytes: usage > inactive ? usage - inactive : 0n,
    rssBytes: stat.get('total_rss') ?? 0n,
    pageFaults: stat.get('total_pgfault') ?? 0n,
    majorPageFaults: stat.get('total_pgmajfault') ?? 0n,
    limitBytes: limit !== undefined && limit < V1_UNLIMITED ? limit : undefined,
  };
}

/** Number of tasks in the cgroup (pids controller), or undefined. */
export async function readProcessCount(cgroupPath: string, layout: CgroupLayout = cgroupLayout()): Promise<bigint | undefined> {
  const dir = controllerDir('pids', cgroupPath, layout);
  const text = dir && (await readText(join(dir, 'pids.current')));
  return text && /^\d+$/.test(text.trim()) ? BigInt(text.trim()) : undefined;
}
