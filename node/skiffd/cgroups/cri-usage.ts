// cgroup readings as the CRI's usage messages, shared by ContainerStats and PodSandboxStats.
import type { DeepPartial, IoUsage, PsiData, PsiStats, SwapUsage } from '../../../proto/gen/runtime/v1/api.ts';
import type { Pressure, PressureLine } from './pressure.ts';
import type { CgroupMemory } from './stats.ts';

const psiData = (l: PressureLine): PsiData => ({ Total: l.totalUs * 1000n, Avg10: l.avg10, Avg60: l.avg60, Avg300: l.avg300 });

/** The CRI counts PSI totals in nanoseconds; the kernel in microseconds. */
export function criPsi(p: Pressure | undefined): DeepPartial<PsiStats> | undefined {
  if (!p) return undefined;
  return { ...(p.full ? { Full: psiData(p.full) } : {}), ...(p.some ? { Some: psiData(p.some) } : {}) };
}

/** I/O usage carries only pressure: none without it. */
export function criIo(p: Pressure | undefined, at: bigint): DeepPartial<IoUsage> | undefined {
  return p ? { timestamp: at, psi: criPsi(p) } : undefined;
}

/** Swap in use and, under a limit, what is left of it (the kubelet leaves "available" out when unlimited). */
export function criSwap(m: CgroupMemory, at: bigint): DeepPartial<SwapUsage> {
  return {
    timestamp: at,
    swapUsageBytes: { value: m.swapBytes },
    ...(m.swapLimitBytes !== undefined ? { swapAvailableBytes: { value: m.swapLimitBytes > m.swapBytes ? m.swapLimitBytes - m.swapBytes : 0n } } : {}),
  };
}

/** What a memory limit leaves over the working set (none once it is reached). */
export const availableBytes = (limit: bigint, workingSet: bigint): bigint => (limit > workingSet ? limit - workingSet : 0n);
