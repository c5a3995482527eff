// PodSandboxMetrics for one ready pod: at pod level its cgroup's series (what its containers use
// together) and its network counters per interface; for each running container what its cgroup, its
// processes, its writable layer and its recorded resources say. Read on demand (no cache), so every
// sample carries the time it was read.
import { ContainerState, type DeepPartial, type Metric, type PodSandboxMetrics } from '../../../proto/gen/runtime/v1/api.ts';
import { blockDeviceName, readIo } from '../cgroups/io.ts';
import { readPressure, type Pressure } from '../cgroups/pressure.ts';
import { readCgroupProcesses } from '../cgroups/processes.ts';
import { readCpu, readCpuSpec, readMemory, readTasks } from '../cgroups/stats.ts';
import type { ContainerManager, ContainerView } from '../containers/manager.ts';
import type { Logger } from '../logger.ts';
import { parseNetDev, podNetDev } from '../pods/stats.ts';
import type { PodEntry } from '../pods/record-file.ts';
import { nowNs } from '../util/clock.ts';
import { FAMILIES, type MetricName } from './descriptors.ts';
import { LoadAverages } from './load-average.ts';

const NS_PER_S = 1_000_000_000n;
const US_PER_S = 1_000_000n;
/** Kept across reads: a load average is a mean over time. */
const loads = new LoadAverages();

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

/** What one cgroup's files and processes say, read concurrently; a part that cannot be read is left out. */
async function readCgroup(cg: string, soft: <T>(what: string, p: Promise<T>) => Promise<T | undefined>) {
  const [cpu, memory, tasks, pressure, io, processes] = await Promise.all([
    soft('cpu', readCpu(cg)),
    soft('memory', readMemory(cg)),
    soft('tasks', readTasks(cg)),
    soft('pressure', readPressure(cg)),
    soft('io', readIo(cg)),
    soft('processes', readCgroupProcesses(cg)),
  ]);
  return { cpu, memory, tasks, pressure, io, processes };
}

/** The series every cgroup has, a container's or a pod's, as cAdvisor gives both. */
async function addCgroupSeries(s: Samples, key: string, c: Awaited<ReturnType<typeof readCgroup>>, scope: 'container' | 'pod'): Promise<void> {
  const { cpu, memory, tasks, pressure, io, processes } = c;
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
    s.add('container_memory_kernel_usage', memory.kernelBytes);
    s.add('container_memory_total_active_file_bytes', memory.activeFileBytes);
    s.add('container_memory_total_inactive_file_bytes', memory.inactiveFileBytes);
    // The counters are hierarchical: a container has no child cgroups, and a pod's are its containers.
    for (const scope of ['container', 'hierarchy']) {
      s.add('container_memory_failures_total', memory.pageFaults, ['pgfault', scope]);
      s.add('container_memory_failures_total', memory.majorPageFaults, ['pgmajfault', scope]);
    }
    s.add('container_oom_events_total', memory.oomKills);
    // As cAdvisor: 0 when nothing is promised.
    s.add('container_spec_memory_reservation_limit_bytes', memory.reservationBytes ?? 0n);
  }
  // A pod's processes are in its containers' cgroups: only the walk below the pod's counts them.
  s.add('container_processes', scope === 'pod' ? processes?.processes : (tasks?.processes ?? processes?.processes));
  if (tasks) {
    s.add('container_threads', tasks.threads);
    if (tasks.threads !== undefined) s.add('container_threads_max', tasks.threadsMax ?? 0n);
  }
  if (processes) {
    s.add('container_file_descriptors', processes.fileDescriptors);
    s.add('container_sockets', processes.sockets);
    s.add('container_ulimits_soft', processes.maxOpenFilesSoft, ['max_open_files']);
    const t = processes.threads;
    if (t) {
      s.add('container_tasks_state', t.running, ['running']);
      s.add('container_tasks_state', t.sleeping, ['sleeping']);
      s.add('container_tasks_state', t.stopped, ['stopped']);
      s.add('container_tasks_state', t.uninterruptible, ['uninterruptible']);
      const avg = loads.sample(key, Number(t.running), Number(t.uninterruptible), Number(process.hrtime.bigint()));
      // In thousandths of a thread, as cAdvisor exports them.
      s.add('container_cpu_load_average_10s', BigInt(Math.round(avg.load * 1000)));
      s.add('container_cpu_load_d_average_10s', BigInt(Math.round(avg.loadD * 1000)));
    }
  }
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
}

const softReader =
  (log: Logger, what: string, id: string) =>
  <T>(part: string, p: Promise<T>): Promise<T | undefined> =>
    p.catch((err) => {
      log.warn(`cannot read ${what} metrics`, { id, what: part, err: String(err) });
      return undefined;
    });

async function containerMetrics(manager: ContainerManager, v: ContainerView, pod: PodEntry, log: Logger): Promise<DeepPartial<Metric>[]> {
  const r = v.record;
  const soft = softReader(log, 'container', r.id);
  const cg = r.cgroupsPath;
  const [read, layer] = await Promise.all([cg ? readCgroup(cg, soft) : undefined, soft('writable layer', manager.writableLayerUsage(r.id))]);
  const at = nowNs();
  // The kubelet puts the name from the pod spec in user_specified_image and may send an image id in image.
  const s = new Samples([r.id, r.fullName, r.image.userSpecifiedImage || r.image.image, r.metadata?.name ?? '', ...podLabels(pod)], at);
  if (read) await addCgroupSeries(s, r.id, read, 'container');
  if (layer) s.add('container_fs_usage_bytes', layer.bytes);
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
 * The pod cgroup's own series: what its containers use together, with their limits as the kubelet set
 * them on the pod, labelled like cAdvisor's series for a pod (no container name).
 */
async function podCgroupMetrics(pod: PodEntry, log: Logger): Promise<DeepPartial<Metric>[]> {
  const cg = pod.cgroupParent;
  if (!cg) return [];
  const soft = softReader(log, 'pod', pod.id);
  const [read, spec] = await Promise.all([readCgroup(cg, soft), soft('cpu spec', readCpuSpec(cg))]);
  const at = nowNs();
  const s = new Samples([pod.id, 'POD', '', '', ...podLabels(pod)], at);
  await addCgroupSeries(s, `pod:${pod.id}`, read, 'pod');
  if (spec) {
    s.add('container_spec_cpu_shares', spec.shares);
    s.add('container_spec_cpu_period', spec.periodUs);
    s.add('container_spec_cpu_quota', spec.quotaUs);
  }
  if (read.memory) {
    s.add('container_spec_memory_limit_bytes', read.memory.limitBytes ?? 0n);
    s.add('container_spec_memory_swap_limit_bytes', read.memory.swapLimitBytes ?? 0n);
  }
  s.add('container_start_time_seconds', pod.createdAt / NS_PER_S);
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
  const [network, own, containerMetricsList] = await Promise.all([
    podNetworkMetrics(pod).catch((err) => {
      log.warn('cannot read pod network counters', { pod: pod.id, err: String(err) });
      return [];
    }),
    podCgroupMetrics(pod, log).catch((err) => {
      log.warn('cannot read pod metrics', { pod: pod.id, err: String(err) });
      return [];
    }),
    Promise.all(running.map(async (v) => ({ containerId: v.record.id, metrics: await containerMetrics(manager, v, pod, log) }))),
  ]);
  return { podSandboxId: pod.id, metrics: [...own, ...network], containerMetrics: containerMetricsList };
}
