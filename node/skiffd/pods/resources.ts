// UpdatePodSandboxResources: the pod cgroup's CPU and memory limits set to the pod's totals (its
// containers' resources plus the sandbox overhead), as the kubelet asks on an in-place pod resize.
import type { LinuxContainerResources } from '../../../proto/gen/runtime/v1/api.ts';
import { cgroupfsDriver } from '../cgroups/driver.ts';
import type { CgroupLimits } from '../cgroups/limits.ts';
import { notFound, requireId, ServerError, Status } from './errors.ts';
import type { PodStore } from './store.ts';

/** The pod's totals: container resources plus overhead, each limit present in either. */
export function podLimits(resources: LinuxContainerResources | undefined, overhead: LinuxContainerResources | undefined): CgroupLimits {
  const parts = [resources, overhead].filter((r): r is LinuxContainerResources => !!r);
  for (const r of parts) {
    for (const [field, value] of [
      ['cpu_shares', r.cpuShares],
      ['cpu_quota', r.cpuQuota],
      ['cpu_period', r.cpuPeriod],
      ['memory_limit_in_bytes', r.memoryLimitInBytes],
    ] as const) {
      if (value < 0n && !(field === 'cpu_quota' && value === -1n)) throw new ServerError(Status.INVALID_ARGUMENT, `resources.${field} must not be negative`);
    }
  }
  const sum = (pick: (r: LinuxContainerResources) => bigint) => {
    const values = parts.map(pick).filter((v) => v > 0n);
    return values.length > 0 ? Number(values.reduce((a, b) => a + b, 0n)) : undefined;
  };
  const limits: CgroupLimits = {};
  const shares = sum((r) => r.cpuShares);
  if (shares !== undefined) limits.cpuShares = Math.min(262_144, Math.max(2, shares));
  const period = parts.map((r) => r.cpuPeriod).find((v) => v > 0n);
  const quota = sum((r) => r.cpuQuota);
  if (quota !== undefined) {
    limits.cpuQuotaUs = quota;
    limits.cpuPeriodUs = period ? Number(period) : 100_000;
  }
  const memory = sum((r) => r.memoryLimitInBytes);
  if (memory !== undefined) limits.memoryBytes = memory;
  return limits;
}

/** Containers keep their own limits; only the pod cgroup changes. */
export async function updatePodResources(
  store: PodStore,
  idOrPrefix: string,
  resources: LinuxContainerResources | undefined,
  overhead: LinuxContainerResources | undefined,
): Promise<void> {
  requireId(idOrPrefix);
  if (!resources && !overhead) throw new ServerError(Status.INVALID_ARGUMENT, "resources or overhead is required: the pod's new totals");
  const found = store.resolve(idOrPrefix) ?? notFound(idOrPrefix);
  const limits = podLimits(resources, overhead);
  await store.withLock(found.id, async () => {
    const entry = store.get(found.id) ?? notFound(idOrPrefix);
    if (entry.state !== 'SANDBOX_READY')
      throw new ServerError(Status.FAILED_PRECONDITION, `pod sandbox ${entry.id} is not ready (${entry.state}): nothing runs in its cgroup`);
    await (store.options.cgroups ?? cgroupfsDriver).setPodLimits(entry.cgroupParent, limits).catch((err: Error) => {
      throw new ServerError(Status.INTERNAL, `updating the cgroup ${entry.cgroupParent} of pod sandbox ${entry.id}: ${err.message}`);
    });
    store.log.info('pod resources updated', { pod: entry.id, ...limits });
  });
}
