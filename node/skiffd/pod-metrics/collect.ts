// PodSandboxMetrics for one ready pod: its network counters per interface at pod level, and for each
// running container what its cgroup, its writable layer and its recorded resources say. Read on demand
// (no cache), so every sample carries the time it was read.
import { ContainerState, type DeepPartial, type Metric, type PodSandboxMetrics } from '../../../proto/gen/runtime/v1/api.ts';
import { blockDeviceName, readIo } from '../cgroups/io.ts';
import { readPressure, type Pressure } from '../cgroups/pressure.ts';
import { readCpu, readMemory, readTasks } from '../cgroups/stats.ts';
import type { ContainerManager, ContainerView } from '../containers/manager.ts';
import type { Logger } from '../logger.ts';
import { parseNetDev, podNetDev } from '../pods/stats.ts';
import type { PodEntry } from '../pods/record-file.ts';
import { nowNs } from '../util/clock.ts';
import { FAMILIES, type MetricName } from './descriptors.ts';

const NS_PER_S = 1_000_000_000n;
const US_PER_S = 1_000_000n;

/** Samples sharing one set of base label values and one timestamp. */
class Samples {
  readonly metrics: DeepPartial<Metric>[] = [];

  constructor(
    private readonly base: string[],
    private readonly at: bigint,
  ) {}

  /** Skips a value the host could not tell. */
  add(name: MetricName, value: bigint | undefined, extra: string[] = []): void {
    if (value === undefined) return;
    const family = FAMILIES[name];
    const keys: readonly string[] = 'labels' in family ? family.labels : [];
    if (keys.length !== extra.length) throw new Error(`${name} takes labels [${keys.join(', ')}], got [${extra.join(', ')}]`);
    this.metrics.push({ name, timestamp: this.at, metricType: family.type, labelValues: [...this.base, ...extra], value: { value: value < 0n ? 0n : value } });
  }
}

/** The `pod` and `namespace` label values. */
const podLabels = (pod: PodEntry) => [pod.config.metadata?.name ?? '', pod.config.metadata?.namespace ?? ''];

async function podNetworkMetrics(pod: PodEntry): Promise<DeepPartial<Metric>[]> {
  // A host-network pod has no interfaces of its own; the node's belong to no pod.
  if (pod.networkMode === 'NODE') return [];
  const text = await podNetDev(pod);
  if (!text) return [];
  // The pod's own series carry an empty container name, as cAdvisor's for the pod's cgroup.
  const s = new Samples([pod.id, 'POD', '', '', ...podLabels(pod)], nowNs());
  for (const c of parseNetDev(text)) {
    if (c.name === 'lo') continue;
    const i = [c.name];
    s.add('container_network_receive_bytes_total', c.rxBytes, i);
    s.add('container_network_receive_packets_total', c.rxPackets, i);
    s.add('container_network_receive_packets_dropped_total', c.rxDropped, i);
    s.add('container_network_receive_errors_total', c.rxErrors, i);
    s.add('container_network_transmit_bytes_total', c.txBytes, i);
    s.add('container_network_transmit_packets_total', c.txPackets, i);
    s.add('container_network_transmit_packets_dropped_total', c.txDropped, i);
    s.add('container_network_transmit_errors_total', c.txErrors, i);
  }
  return s.metrics;
}

async function containerMetrics(manager: ContainerManager, v: ContainerView, pod: PodEntry, log: Logger): Promise<DeepPartial<Metric>[]> {
  const r = v.record;
  const soft = <T>(what: string, p: Promise<T>): Promise<T | undefined> =>
    p.catch((err) => {
      log.warn('cannot read container metrics', { id: r.id, what, err: String(err) });
      return undefined;
    });
  const cg = r.cgroupsPath;
  const [cpu, memory, tasks, pressure, io, layer] = await Promise.all([
    cg ? soft('cpu', readCpu(cg)) : undefined,
    cg ? soft('memory', readMemory(cg)) : undefined,
    cg ? soft('tasks', readTasks(cg)) : undefined,
    cg ? soft('pressure', readPressure(cg)) : undefined,
    cg ? soft('io', readIo(cg)) : undefined,
    soft('writable layer', manager.writableLayerUsage(r.id)),
  ]);
  const at = nowNs();
  // The kubelet puts the name from the pod spec in user_specified_image and may send an image id in image.
  const s = new Samples([r.id, r.fullName, r.image.userSpecifiedImage || r.image.image, r.metadata?.name ?? '', ...podLabels(pod)], at);
  if (cpu) {
    s.add('container_cpu_usage_seconds_total', cpu.usageNs / NS_PER_S, ['total']);
    s.add('container_cpu_user_seconds_total', cpu.userNs === undefined ? undefined : cpu.userNs / NS_PER_S);
    s.add('container_cpu_system_seconds_total', cpu.systemNs === undefined ? undefined : cpu.systemNs / NS_PER_S);
    if (cpu.throttling) {
      s.add('container_cpu_cfs_periods_total', cpu.throttling.periods);
      s.add('container_cpu_cfs_throttled_periods_total', cpu.throttling.throttledPeriods);
      s.add('container_cpu_cfs_throttled_seconds_total', cpu.throttling.throttledNs / NS_PER_S);
    }
  }
  if (memory) {
    s.add('container_memory_usage_bytes', memory.usageBytes);
    s.add('container_memory_working_set_bytes', memory.workingSetBytes);
    s.add('container_memory_rss', memory.rssBytes);
    s.add('container_memory_cache', memory.cacheBytes);
    s.add('container_memory_mapped_file', memory.mappedFileBytes);
    s.add('container_memory_swap', memory.swapBytes);
    s.add('container_memory_max_usage_bytes', memory.maxUsageBytes);
    s.add('container_memory_failcnt', memory.failcnt);
    // A container's cgroup has no children, so its own and its hierarchy's counts are the same.
    for (const scope of ['container', 'hierarchy']) {
      s.add('container_memory_failures_total', memory.pageFaults, ['pgfault', scope]);
      s.add('container_memory_failures_total', memory.majorPageFaults, ['pgmajfault', scope]);
    }
    s.add('container_oom_events_total', memory.oomKills);
  }
  if (tasks) {
    s.add('container_processes', tasks.processes);
    s.add('container_threads', tasks.threads);
    if (tasks.threads !== undefined) s.add('container_threads_max', tasks.threadsMax ?? 0n);
  }
  if (layer) s.add('container_fs_usage_bytes', layer.bytes);
  for (const dev of io ?? []) {
    const device = [await blockDeviceName(dev.major, dev.minor)];
    s.add('container_fs_reads_bytes_total', dev.readBytes, device);
    s.add('container_fs_writes_bytes_total', dev.writeBytes, device);
    s.add('container_fs_reads_total', dev.reads, device);
    s.add('container_fs_writes_total', dev.writes, device);
    const ids = [...device, String(dev.major), String(dev.minor)];
    s.add('container_blkio_device_usage_total', dev.readBytes, [...ids, 'Read']);
    s.add('container_blkio_device_usage_total', dev.writeBytes, [...ids, 'Write']);
  }
  const seconds = (p: Pressure | undefined, line: 'some' | 'full') => (p?.[line] ? p[line].totalUs / US_PER_S : undefined);
  s.add('container_pressure_cpu_waiting_seconds_total', seconds(pressure?.cpu, 'some'));
  s.add('container_pressure_cpu_stalled_seconds_total', seconds(pressure?.cpu, 'full'));
  s.add('container_pressure_memory_waiting_seconds_total', seconds(pressure?.memory, 'some'));
  s.add('container_pressure_memory_stalled_seconds_total', seconds(pressure?.memory, 'full'));
  s.add('container_pressure_io_waiting_seconds_total', seconds(pressure?.io, 'some'));
  s.add('container_pressure_io_stalled_seconds_total', seconds(pressure?.io, 'full'));
  const res = r.resources;
  s.add('container_spec_cpu_shares', BigInt(res.cpuShares));
  s.add('container_spec_cpu_period', BigInt(res.cpuPeriod));
  if (BigInt(res.cpuQuota) > 0n) s.add('container_spec_cpu_quota', BigInt(res.cpuQuota));
  s.add('container_spec_memory_limit_bytes', BigInt(res.memoryLimitInBytes));
  s.add('container_spec_memory_swap_limit_bytes', BigInt(res.memorySwapLimitInBytes));
  if (r.startedAt) s.add('container_start_time_seconds', BigInt(r.startedAt) / NS_PER_S);
  s.add('container_last_seen', at / NS_PER_S);
  return s.metrics;
}

/**
 * Metrics of `pod` and of those of `containers` that run in it. A container that ends meanwhile
 * simply has fewer samples: its cgroup files are gone.
 */
export async function collectPodMetrics(
  pod: PodEntry,
  containers: ContainerView[],
  manager: ContainerManager,
  log: Logger,
): Promise<DeepPartial<PodSandboxMetrics>> {
  const running = containers.filter((v) => v.record.podSandboxId === pod.id && v.state === ContainerState.CONTAINER_RUNNING);
  const [metrics, containerMetricsList] = await Promise.all([
    podNetworkMetrics(pod).catch((err) => {
      log.warn('cannot read pod network counters', { pod: pod.id, err: String(err) });
      return [];
    }),
    Promise.all(running.map(async (v) => ({ containerId: v.record.id, metrics: await containerMetrics(manager, v, pod, log) }))),
  ]);
  return { podSandboxId: pod.id, metrics, containerMetrics: containerMetricsList };
}
