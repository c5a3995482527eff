// The cAdvisor-style metrics ListPodSandboxMetrics serves, with the names, label keys and types CRI-O
// uses, so the kubelet (PodAndContainerStatsFromCRI) and dashboards built on cAdvisor read them as
// they are. Every metric has the base labels `id`, `name` and `image`, then `container`, `pod` and
// `namespace` (what cAdvisor labels a containerd or CRI-O container with, which dashboards select on:
// the kubelet adds none of its own to a runtime's metrics), then its own.
//
// Metric.value is a UInt64, and the kubelet publishes it unchanged as a Prometheus float: a metric
// named in seconds carries whole seconds (truncated), as CRI-O does, never nanoseconds.
import { MetricType, type MetricDescriptor } from '../../../proto/gen/runtime/v1/api.ts';

export const BASE_LABEL_KEYS = ['id', 'name', 'image', 'container', 'pod', 'namespace'] as const;

interface Family {
  help: string;
  type: MetricType;
  /** Label keys after the base ones. */
  labels?: readonly string[];
}

const { COUNTER, GAUGE } = MetricType;
const NETWORK = ['interface'] as const;
const DEVICE = ['device'] as const;

export const FAMILIES = {
  // Per container, from its cgroup.
  container_cpu_usage_seconds_total: { help: 'CPU time used by the container, in whole seconds.', type: COUNTER, labels: ['cpu'] },
  container_cpu_user_seconds_total: { help: 'CPU time used in user mode, in whole seconds.', type: COUNTER },
  container_cpu_system_seconds_total: { help: 'CPU time used in kernel mode, in whole seconds.', type: COUNTER },
  container_cpu_cfs_periods_total: { help: 'CFS bandwidth periods that have elapsed while the container ran.', type: COUNTER },
  container_cpu_cfs_throttled_periods_total: { help: 'CFS bandwidth periods in which the container was throttled.', type: COUNTER },
  container_cpu_cfs_throttled_seconds_total: { help: 'Time the container spent throttled, in whole seconds.', type: COUNTER },
  container_memory_usage_bytes: { help: 'Memory charged to the container in bytes, page cache included.', type: GAUGE },
  container_memory_working_set_bytes: { help: 'Memory usage minus inactive file pages, in bytes.', type: GAUGE },
  container_memory_rss: { help: 'Anonymous memory (RSS) in bytes.', type: GAUGE },
  container_memory_cache: { help: 'Page cache in bytes.', type: GAUGE },
  container_memory_mapped_file: { help: 'Memory-mapped files in bytes.', type: GAUGE },
  container_memory_swap: { help: 'Swap used by the container in bytes.', type: GAUGE },
  container_memory_max_usage_bytes: { help: 'Highest memory usage the kernel recorded, in bytes.', type: GAUGE },
  container_memory_failcnt: { help: 'Times memory usage reached the limit.', type: COUNTER },
  container_memory_failures_total: {
    help: 'Page faults, by type (pgfault, pgmajfault) and scope (container, hierarchy).',
    type: COUNTER,
    labels: ['failure_type', 'scope'],
  },
  container_memory_kernel_usage: { help: 'Kernel memory charged to the container (slab, stacks, page tables), in bytes.', type: GAUGE },
  container_memory_total_active_file_bytes: { help: 'File pages on the active LRU list, in bytes.', type: GAUGE },
  container_memory_total_inactive_file_bytes: { help: 'File pages on the inactive LRU list, in bytes.', type: GAUGE },
  container_oom_events_total: { help: 'Processes of the container killed by the OOM killer.', type: COUNTER },
  container_processes: { help: 'Processes in the container.', type: GAUGE },
  container_threads: { help: 'Threads in the container.', type: GAUGE },
  container_threads_max: { help: 'Thread limit of the container (pids.max); 0 means unlimited.', type: GAUGE },
  container_fs_usage_bytes: { help: "Bytes used by the container's writable layer.", type: GAUGE },
  // Per container, from its processes in /proc.
  container_file_descriptors: { help: 'Open file descriptors of the processes of the container.', type: GAUGE },
  container_sockets: { help: 'Open sockets of the processes of the container.', type: GAUGE },
  container_tasks_state: {
    help: 'Threads of the container by scheduler state (running, sleeping, stopped, uninterruptible).',
    type: GAUGE,
    labels: ['state'],
  },
  container_ulimits_soft: { help: "Soft resource limits of the container's first process (max_open_files).", type: GAUGE, labels: ['ulimit'] },
  container_cpu_load_average_10s: { help: 'Runnable threads of the container, averaged over the last 10 seconds, in thousandths.', type: GAUGE },
  container_cpu_load_d_average_10s: {
    help: 'Threads of the container in uninterruptible sleep, averaged over the last 10 seconds, in thousandths.',
    type: GAUGE,
  },
  // Per container and block device, from the cgroup's I/O counters.
  container_fs_reads_bytes_total: { help: 'Bytes read from the device.', type: COUNTER, labels: DEVICE },
  container_fs_writes_bytes_total: { help: 'Bytes written to the device.', type: COUNTER, labels: DEVICE },
  container_fs_reads_total: { help: 'Reads from the device completed.', type: COUNTER, labels: DEVICE },
  container_fs_writes_total: { help: 'Writes to the device completed.', type: COUNTER, labels: DEVICE },
  container_blkio_device_usage_total: {
    help: 'Bytes transferred to and from the device, by operation (Read, Write).',
    type: COUNTER,
    labels: ['device', 'major', 'minor', 'operation'],
  },
  // Per container, from the cgroup's pressure stall information (cgroup v2 hosts).
  container_pressure_cpu_waiting_seconds_total: { help: 'Time some task of the container waited for a CPU, in whole seconds.', type: COUNTER },
  container_pressure_cpu_stalled_seconds_total: { help: 'Time no task of the container could run for want of a CPU, in whole seconds.', type: COUNTER },
  container_pressure_memory_waiting_seconds_total: { help: 'Time some task of the container waited for memory, in whole seconds.', type: COUNTER },
  container_pressure_memory_stalled_seconds_total: { help: 'Time no task of the container could run for want of memory, in whole seconds.', type: COUNTER },
  container_pressure_io_waiting_seconds_total: { help: 'Time some task of the container waited for I/O, in whole seconds.', type: COUNTER },
  container_pressure_io_stalled_seconds_total: { help: 'Time no task of the container could run for want of I/O, in whole seconds.', type: COUNTER },
  // Per container, from the resources it was created or last updated with (a pod's from its cgroup).
  container_spec_cpu_shares: { help: 'CPU shares the container was given.', type: GAUGE },
  container_spec_cpu_period: { help: 'CFS period of the container in microseconds; 0 when not set.', type: GAUGE },
  container_spec_cpu_quota: { help: 'CFS quota of the container in microseconds; absent when not set.', type: GAUGE },
  container_spec_memory_limit_bytes: { help: 'Memory limit of the container in bytes; 0 when unlimited.', type: GAUGE },
  container_spec_memory_swap_limit_bytes: { help: 'Memory plus swap limit of the container in bytes; 0 when not set.', type: GAUGE },
  container_spec_memory_reservation_limit_bytes: {
    help: 'Memory promised to the container (memory.min on cgroup v2, the soft limit on v1) in bytes; 0 when none.',
    type: GAUGE,
  },
  container_start_time_seconds: { help: 'When the container started, in seconds since the epoch.', type: GAUGE },
  container_last_seen: { help: 'When these metrics were read, in seconds since the epoch.', type: GAUGE },
  // Per pod, per interface of its network namespace.
  container_network_receive_bytes_total: { help: 'Bytes received.', type: COUNTER, labels: NETWORK },
  container_network_receive_packets_total: { help: 'Packets received.', type: COUNTER, labels: NETWORK },
  container_network_receive_packets_dropped_total: { help: 'Packets dropped while receiving.', type: COUNTER, labels: NETWORK },
  container_network_receive_errors_total: { help: 'Errors while receiving.', type: COUNTER, labels: NETWORK },
  container_network_transmit_bytes_total: { help: 'Bytes transmitted.', type: COUNTER, labels: NETWORK },
  container_network_transmit_packets_total: { help: 'Packets transmitted.', type: COUNTER, labels: NETWORK },
  container_network_transmit_packets_dropped_total: { help: 'Packets dropped while transmitting.', type: COUNTER, labels: NETWORK },
  container_network_transmit_errors_total: { help: 'Errors while transmitting.', type: COUNTER, labels: NETWORK },
} as const satisfies Record<string, Family>;

export type MetricName = keyof typeof FAMILIES;

export function metricDescriptors(): MetricDescriptor[] {
  return Object.entries(FAMILIES).map(([name, f]: [string, Family]) => ({ name, help: f.help, labelKeys: [...BASE_LABEL_KEYS, ...(f.labels ?? [])] }));
}
