// CPU, memory and task counts of one cgroup, from whichever cgroup version holds each controller.
// Working set follows the kubelet's definition: usage minus inactive file pages. The CRI stats RPCs
// and the cAdvisor-style pod metrics both read through here.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { num, parseFlatKeyed, readText } from './files.ts';
import { cgroupLayout, controllerDir, type CgroupLayout } from './layout.ts';

export interface CgroupCpu {
  /** Cumulative CPU time of all tasks, nanoseconds. */
  usageNs: bigint;
  /** The same split into user and kernel mode, when the cgroup reports it. */
  userNs?: bigint;
  systemNs?: bigint;
  /** CFS bandwidth counters, when the cgroup reports them. */
  throttling?: { periods: bigint; throttledPeriods: bigint; throttledNs: bigint };
}

export interface CgroupMemory {
  usageBytes: bigint;
  workingSetBytes: bigint;
  rssBytes: bigint;
  pageFaults: bigint;
  majorPageFaults: bigint;
  /** undefined when unlimited. */
  limitBytes?: bigint;
  /** Page cache. */
  cacheBytes: bigint;
  mappedFileBytes: bigint;
  /** Swap in use (0 where swap is not accounted). */
  swapBytes: bigint;
  /**
   * The swap limit, undefined when unlimited: memory.swap.max on v2; on v1 memory.memsw.limit_in_bytes,
   * which bounds memory plus swap (what cAdvisor reports as the swap limit there too).
   */
  swapLimitBytes?: bigint;
  /** Highest usage seen, when the kernel keeps it (v1, or v2 from Linux 5.19). */
  maxUsageBytes?: bigint;
  /** Times usage hit the limit. */
  failcnt: bigint;
  /** Processes the OOM killer killed in this cgroup, when the kernel counts them. */
  oomKills?: bigint;
  /** Kernel memory charged to the cgroup (slab, stacks, page tables...), when the kernel tells. */
  kernelBytes?: bigint;
  /** File pages on the active and inactive LRU lists. */
  activeFileBytes?: bigint;
  inactiveFileBytes?: bigint;
  /**
   * The memory the cgroup is promised, as cAdvisor reads it: memory.min on v2, the soft limit
   * (memory.soft_limit_in_bytes) on v1; undefined when unlimited.
   */
  reservationBytes?: bigint;
}

export interface CgroupTasks {
  /** Processes (thread group leaders) in the cgroup. */
  processes?: bigint;
  /** Tasks the pids controller counts, i.e. threads. */
  threads?: bigint;
  /** The pids limit; undefined when unlimited or unknown. */
  threadsMax?: bigint;
}

function isV2(controller: string, layout: CgroupLayout): boolean {
  return layout.mode === 'v2' || (!layout.v1.has(controller) && layout.unifiedControllers.has(controller));
}

/** undefined when the cgroup does not exist (yet). */
export async function readCpu(cgroupPath: string, layout: CgroupLayout = cgroupLayout()): Promise<CgroupCpu | undefined> {
  if (isV2('cpu', layout)) {
    const dir = controllerDir('cpu', cgroupPath, layout);
    const text = dir && (await readText(join(dir, 'cpu.stat')));
    const stat = text ? parseFlatKeyed(text) : undefined;
    const usec = stat?.get('usage_usec');
    if (!stat || usec === undefined) return undefined;
    const cpu: CgroupCpu = { usageNs: usec * 1000n };
    const user = stat.get('user_usec');
    const system = stat.get('system_usec');
    if (user !== undefined && system !== undefined) Object.assign(cpu, { userNs: user * 1000n, systemNs: system * 1000n });
    // Present only where the cpu controller is enabled for this cgroup.
    const periods = stat.get('nr_periods');
    if (periods !== undefined)
      cpu.throttling = { periods, throttledPeriods: stat.get('nr_throttled') ?? 0n, throttledNs: (stat.get('throttled_usec') ?? 0n) * 1000n };
    return cpu;
  }
  const acct = controllerDir('cpuacct', cgroupPath, layout);
  const cpuDir = controllerDir('cpu', cgroupPath, layout);
  if (!acct) return undefined;
  const [usage, user, system, ticks, cpuStat] = await Promise.all([
    readText(join(acct, 'cpuacct.usage')),
    readText(join(acct, 'cpuacct.usage_user')),
    readText(join(acct, 'cpuacct.usage_sys')),
    readText(join(acct, 'cpuacct.stat')),
    cpuDir ? readText(join(cpuDir, 'cpu.stat')) : undefined,
  ]);
  const usageNs = num(usage);
  if (usageNs === undefined) return undefined;
  const cpu: CgroupCpu = { usageNs };
  const userNs = num(user);
  const systemNs = num(system);
  if (userNs !== undefined && systemNs !== undefined) Object.assign(cpu, { userNs, systemNs });
  else if (ticks) {
    // Older kernels: only cpuacct.stat, in USER_HZ ticks (100 per second on Linux).
    const t = parseFlatKeyed(ticks);
    const u = t.get('user');
    const sy = t.get('system');
    if (u !== undefined && sy !== undefined) Object.assign(cpu, { userNs: u * 10_000_000n, systemNs: sy * 10_000_000n });
  }
  const stat = cpuStat ? parseFlatKeyed(cpuStat) : undefined;
  const periods = stat?.get('nr_periods');
  if (stat && periods !== undefined)
    cpu.throttling = { periods, throttledPeriods: stat.get('nr_throttled') ?? 0n, throttledNs: stat.get('throttled_time') ?? 0n };
  return cpu;
}

// v1 reports "unlimited" as a huge page-aligned number.
const V1_UNLIMITED = 1n << 62n;
/** undefined for v1's "unlimited" and for 0 (nothing promised). */
const limited = (v: bigint | undefined) => (v === undefined || v === 0n || v >= V1_UNLIMITED ? undefined : v);

export async function readMemory(cgroupPath: string, layout: CgroupLayout = cgroupLayout()): Promise<CgroupMemory | undefined> {
  const dir = controllerDir('memory', cgroupPath, layout);
  if (!dir) return undefined;
  if (isV2('memory', layout)) {
    const [current, statText, max, events, swap, swapMax, peak, min] = await Promise.all([
      readText(join(dir, 'memory.current')),
      readText(join(dir, 'memory.stat')),
      readText(join(dir, 'memory.max')),
      readText(join(dir, 'memory.events')),
      readText(join(dir, 'memory.swap.current')),
      readText(join(dir, 'memory.swap.max')),
      readText(join(dir, 'memory.peak')),
      readText(join(dir, 'memory.min')),
    ]);
    if (current === undefined || statText === undefined) return undefined;
    const stat = parseFlatKeyed(statText);
    const ev = events ? parseFlatKeyed(events) : new Map<string, bigint>();
    const usage = BigInt(current.trim());
    const inactive = stat.get('inactive_file') ?? 0n;
    return {
      usageBytes: usage,
      workingSetBytes: usage > inactive ? usage - inactive : 0n,
      rssBytes: stat.get('anon') ?? 0n,
      pageFaults: stat.get('pgfault') ?? 0n,
      majorPageFaults: stat.get('pgmajfault') ?? 0n,
      limitBytes: num(max),
      cacheBytes: stat.get('file') ?? 0n,
      mappedFileBytes: stat.get('file_mapped') ?? 0n,
      swapBytes: num(swap) ?? 0n,
      swapLimitBytes: num(swapMax),
      maxUsageBytes: num(peak),
      failcnt: ev.get('max') ?? 0n,
      oomKills: ev.get('oom_kill'),
      // memory.stat's kernel total appeared in Linux 5.18.
      kernelBytes: stat.get('kernel'),
      activeFileBytes: stat.get('active_file'),
      inactiveFileBytes: stat.get('inactive_file'),
      reservationBytes: limited(num(min)),
    };
  }
  const [usageText, statText, limitText, failcnt, maxUsage, oomControl, memswLimit, kmem, softLimit] = await Promise.all([
    readText(join(dir, 'memory.usage_in_bytes')),
    readText(join(dir, 'memory.stat')),
    readText(join(dir, 'memory.limit_in_bytes')),
    readText(join(dir, 'memory.failcnt')),
    readText(join(dir, 'memory.max_usage_in_bytes')),
    readText(join(dir, 'memory.oom_control')),
    readText(join(dir, 'memory.memsw.limit_in_bytes')),
    readText(join(dir, 'memory.kmem.usage_in_bytes')),
    readText(join(dir, 'memory.soft_limit_in_bytes')),
  ]);
  if (usageText === undefined || statText === undefined) return undefined;
  const stat = parseFlatKeyed(statText);
  const usage = BigInt(usageText.trim());
  const inactive = stat.get('total_inactive_file') ?? 0n;
  const limit = num(limitText);
  const swapLimit = num(memswLimit);
  return {
    usageBytes: usage,
    workingSetBytes: usage > inactive ? usage - inactive : 0n,
    rssBytes: stat.get('total_rss') ?? 0n,
    pageFaults: stat.get('total_pgfault') ?? 0n,
    majorPageFaults: stat.get('total_pgmajfault') ?? 0n,
    limitBytes: limit !== undefined && limit < V1_UNLIMITED ? limit : undefined,
    cacheBytes: stat.get('total_cache') ?? 0n,
    mappedFileBytes: stat.get('total_mapped_file') ?? 0n,
    // total_swap is there only when the kernel accounts swap (memory.memsw.*).
    swapBytes: stat.get('total_swap') ?? 0n,
    swapLimitBytes: swapLimit !== undefined && swapLimit < V1_UNLIMITED ? swapLimit : undefined,
    maxUsageBytes: num(maxUsage),
    failcnt: num(failcnt) ?? 0n,
    // oom_kill appeared in Linux 4.13.
    oomKills: oomControl ? parseFlatKeyed(oomControl).get('oom_kill') : undefined,
    kernelBytes: num(kmem),
    activeFileBytes: stat.get('total_active_file'),
    inactiveFileBytes: stat.get('total_inactive_file'),
    reservationBytes: limited(num(softLimit)),
  };
}

/** Number of tasks in the cgroup (pids controller), or undefined. */
export async function readProcessCount(cgroupPath: string, layout: CgroupLayout = cgroupLayout()): Promise<bigint | undefined> {
  const dir = controllerDir('pids', cgroupPath, layout);
  return dir ? num(await readText(join(dir, 'pids.current'))) : undefined;
}

/** Processes and threads in the cgroup, and its pids limit; fields the host cannot tell are undefined. */
export async function readTasks(cgroupPath: string, layout: CgroupLayout = cgroupLayout()): Promise<CgroupTasks> {
  const pids = controllerDir('pids', cgroupPath, layout);
  // Every v1 hierarchy lists the same processes; any that has the cgroup will do.
  const procsDir = pids ?? controllerDir('memory', cgroupPath, layout) ?? controllerDir('cpuacct', cgroupPath, layout);
  const [current, max, procs] = await Promise.all([
    pids ? readText(join(pids, 'pids.current')) : undefined,
    pids ? readText(join(pids, 'pids.max')) : undefined,
    procsDir ? readText(join(procsDir, 'cgroup.procs')) : undefined,
  ]);
  return {
    processes: procs === undefined ? undefined : BigInt(procs.split('\n').filter((l) => l.trim()).length),
    threads: num(current),
    threadsMax: num(max),
  };
}

/**
 * Some process in the cgroup or its children (a pod's containers are child cgroups of the pod's), or
 * undefined when none runs. Looks at most two levels down.
 */
export async function anyMemberPid(cgroupPath: string, layout: CgroupLayout = cgroupLayout()): Promise<number | undefined> {
  const top = controllerDir('pids', cgroupPath, layout) ?? controllerDir('memory', cgroupPath, layout) ?? controllerDir('cpuacct', cgroupPath, layout);
  if (!top) return undefined;
  let level = [top];
  for (let depth = 0; depth < 3 && level.length > 0; depth++) {
    for (const dir of level) {
      const first = (await readText(join(dir, 'cgroup.procs')))?.split('\n', 1)[0]?.trim();
      if (first) return Number(first);
    }
    const next: string[] = [];
    for (const dir of level) {
      const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const e of entries) if (e.isDirectory()) next.push(join(dir, e.name));
    }
    level = next;
  }
  return undefined;
}

export interface CgroupCpuSpec {
  shares: bigint;
  /** CFS period in microseconds. */
  periodUs: bigint;
  /** CFS quota in microseconds; undefined when unlimited. */
  quotaUs?: bigint;
}

/**
 * The CPU settings written to the cgroup (a pod's, which skiffd keeps no record of), in v1's units as
 * cAdvisor reports them: v2's weight converted back to shares.
 */
export async function readCpuSpec(cgroupPath: string, layout: CgroupLayout = cgroupLayout()): Promise<CgroupCpuSpec | undefined> {
  const dir = controllerDir('cpu', cgroupPath, layout);
  if (!dir) return undefined;
  if (isV2('cpu', layout)) {
    const [weight, max] = await Promise.all([readText(join(dir, 'cpu.weight')), readText(join(dir, 'cpu.max'))]);
    const w = num(weight);
    const [quota, period] = (max ?? '').trim().split(/\s+/);
    if (w === undefined || !period || !/^\d+$/.test(period)) return undefined;
    return { shares: 2n + ((w - 1n) * 262_142n) / 9_999n, periodUs: BigInt(period), quotaUs: /^\d+$/.test(quota ?? '') ? BigInt(quota) : undefined };
  }
  const [shares, period, quota] = await Promise.all([
    readText(join(dir, 'cpu.shares')),
    readText(join(dir, 'cpu.cfs_period_us')),
    readText(join(dir, 'cpu.cfs_quota_us')),
  ]);
  const s = num(shares);
  const p = num(period);
  if (s === undefined || p === undefined) return undefined;
  // -1 (unlimited) is not a number to num().
  return { shares: s, periodUs: p, quotaUs: num(quota) };
}
