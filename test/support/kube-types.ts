// The parts of the kubelet's read-only API (/pods, /stats/summary) tests read, and small readers of them.

export interface KubeContainerState {
  waiting?: { reason?: string; message?: string };
  running?: { startedAt?: string };
  terminated?: { exitCode: number; reason?: string; message?: string; startedAt?: string; finishedAt?: string; containerID?: string };
}

export interface KubeContainerStatus {
  name: string;
  ready: boolean;
  started?: boolean;
  restartCount: number;
  image: string;
  imageID: string;
  containerID?: string;
  state: KubeContainerState;
  lastState: KubeContainerState;
}

export interface KubePod {
  metadata: { name: string; namespace: string; uid: string; annotations?: Record<string, string> };
  spec: Record<string, unknown> & { containers: { name: string }[] };
  status: {
    phase?: string;
    reason?: string;
    message?: string;
    podIP?: string;
    hostIP?: string;
    qosClass?: string;
    conditions?: { type: string; status: string; reason?: string }[];
    containerStatuses?: KubeContainerStatus[];
    initContainerStatuses?: KubeContainerStatus[];
  };
}

export interface StatsCpu {
  time: string;
  usageNanoCores?: number;
  usageCoreNanoSeconds?: number;
  psi?: StatsPsi;
}

/** Pressure stall information as the summary API shows it (kubelet 1.36, cgroup v2 nodes). */
export interface StatsPsiData {
  total: number;
  avg10: number;
  avg60: number;
  avg300: number;
}

export interface StatsPsi {
  full: StatsPsiData;
  some: StatsPsiData;
}

export interface StatsSwap {
  time: string;
  swapAvailableBytes?: number;
  swapUsageBytes?: number;
}

export interface StatsIo {
  time: string;
  psi?: StatsPsi;
}

export interface StatsMemory {
  time: string;
  availableBytes?: number;
  usageBytes?: number;
  workingSetBytes?: number;
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
  psi?: StatsPsi;
}

export interface StatsFs {
  time: string;
  availableBytes?: number;
  capacityBytes?: number;
  usedBytes?: number;
  inodesFree?: number;
  inodes?: number;
  inodesUsed?: number;
}

export interface StatsContainer {
  name: string;
  startTime: string;
  cpu?: StatsCpu;
  memory?: StatsMemory;
  rootfs?: StatsFs;
  logs?: StatsFs;
  swap?: StatsSwap;
  io?: StatsIo;
}

export interface StatsPod {
  podRef: { name: string; namespace: string; uid: string };
  startTime: string;
  containers?: StatsContainer[];
  cpu?: StatsCpu;
  memory?: StatsMemory;
  network?: { time: string; name?: string; rxBytes?: number; txBytes?: number; interfaces?: { name: string; rxBytes?: number; txBytes?: number }[] };
  volume?: (StatsFs & { name: string })[];
  'ephemeral-storage'?: StatsFs;
  process_stats?: { process_count?: number };
  swap?: StatsSwap;
  io?: StatsIo;
}

export interface StatsSummary {
  node: { nodeName: string; cpu?: StatsCpu; memory?: StatsMemory; fs?: StatsFs; runtime?: { imageFs?: StatsFs; containerFs?: StatsFs } };
  pods?: StatsPod[];
}

export function containerStatus(pod: KubePod, name: string): KubeContainerStatus | undefined {
  return [...(pod.status.containerStatuses ?? []), ...(pod.status.initContainerStatuses ?? [])].find((c) => c.name === name);
}

export function condition(pod: KubePod, type: string): boolean {
  return pod.status.conditions?.some((c) => c.type === type && c.status === 'True') ?? false;
}

/** The pod is Ready (every container ready, as the kubelet judges it). */
export function isReady(pod: KubePod): KubePod | undefined {
  return condition(pod, 'Ready') ? pod : undefined;
}
