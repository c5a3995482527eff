// The JSON record kept per container (<root>/containers/<id>/container.json). It is rewritten
// atomically at every lifecycle step, so after a crash it names the last step that completed.
import type { LinuxContainerResources, Mount } from '../../../proto/gen/runtime/v1/api.ts';
import type { UserNamespaceMappings } from '../pods/userns.ts';
import type { IdmappedMount } from './idmap-mounts.ts';

/**
 * creating: CreateContainer began but did not finish (a crash here leaves debris to clean up).
 * created:  rootfs mounted and config.json written; the runtime does not know it yet (StartContainer
 *           creates it under conmon and starts it, as containerd does).
 * running:  written just before `runc start`; whether it still runs is told by the exit file
 *           (and, after a crash, by `runc state`).
 * exited:   the exit code and time are recorded here.
 */
export type ContainerPhase = 'creating' | 'created' | 'running' | 'exited';

export interface ResourcesJson {
  cpuPeriod: string;
  cpuQuota: string;
  cpuShares: string;
  memoryLimitInBytes: string;
  oomScoreAdj: string;
  cpusetCpus: string;
  cpusetMems: string;
  hugepageLimits: { pageSize: string; limit: string }[];
  unified: Record<string, string>;
  memorySwapLimitInBytes: string;
}

export interface MountJson {
  containerPath: string;
  hostPath: string;
  readonly: boolean;
  selinuxRelabel: boolean;
  propagation: number;
  recursiveReadOnly: boolean;
}

export interface ContainerRecord {
  version: 1;
  id: string;
  podSandboxId: string;
  /** Unique within the daemon: name, pod name, pod namespace, pod uid, attempt. */
  fullName: string;
  metadata: { name: string; attempt: number };
  image: { image: string; annotations: Record<string, string>; userSpecifiedImage: string; runtimeHandler: string };
  imageRef: string;
  imageId: string;
  /**
   * The image's tag when the container was made. A kubelet creates containers by image id; their status
   * names the image by tag, as containerd does, so the pod's status shows `busybox:1.36`, not `sha256:...`.
   */
  imageTag?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** Host path of the CRI log ('' when the kubelet gave no log directory / path). */
  logPath: string;
  /** Where conmon actually writes (logPath, or a file in the container dir). */
  conmonLogPath: string;
  phase: ContainerPhase;
  /** Nanoseconds since the epoch, as decimal strings (they exceed 2^53). */
  createdAt: string;
  startedAt?: string;
  finishedAt?: string;
  exitCode?: number;
  reason?: string;
  message?: string;
  pid?: number;
  /** The init's start time (/proc/PID/stat field 22), to tell it from a later process with the same pid. */
  pidStartTime?: string;
  conmonPid?: number;
  mounts: MountJson[];
  resources: ResourcesJson;
  user: { uid: number; gid: number; additionalGids: number[] };
  stopSignal: number;
  stopSignalName: string;
  /** The CRI Signal enum value reported in ContainerStatus.stop_signal. */
  criStopSignal: number;
  lowerDirs: string[];
  /**
   * The pod's user namespace mappings when the container runs in one: its rootfs is mounted over
   * ID-mapped layers (idmap-rootfs.ts).
   */
  userNamespace?: UserNamespaceMappings;
  /** The pod's pinned user namespace, and the volumes to ID-map with it when the runtime creates the container. */
  userNamespacePath?: string;
  idmappedMounts?: IdmappedMount[];
  /** Mounts whose source is an image: mounted read-only under the container's directory (image-volumes.ts). */
  imageVolumes?: ImageVolume[];
  /** The container cgroup's path in the hierarchy (as /proc/PID/cgroup shows it), whichever driver made it. */
  cgroupsPath: string;
  /** After exit: runtime state deleted and rootfs unmounted. */
  released?: boolean;
  /** No private PID namespace: SIGKILL must reach every process of the cgroup, not just init. */
  killAll?: boolean;
  tty: boolean;
  stdin: boolean;
  stdinOnce: boolean;
  runtime: string;
}

export function resourcesToJson(r: LinuxContainerResources | undefined): ResourcesJson {
  return {
    cpuPeriod: String(r?.cpuPeriod ?? 0n),
    cpuQuota: String(r?.cpuQuota ?? 0n),
    cpuShares: String(r?.cpuShares ?? 0n),
    memoryLimitInBytes: String(r?.memoryLimitInBytes ?? 0n),
    oomScoreAdj: String(r?.oomScoreAdj ?? 0n),
    cpusetCpus: r?.cpusetCpus ?? '',
    cpusetMems: r?.cpusetMems ?? '',
    hugepageLimits: (r?.hugepageLimits ?? []).map((h) => ({ pageSize: h.pageSize, limit: String(h.limit) })),
    unified: { ...(r?.unified ?? {}) },
    memorySwapLimitInBytes: String(r?.memorySwapLimitInBytes ?? 0n),
  };
}

export function resourcesFromJson(j: ResourcesJson): LinuxContainerResources {
  return {
    cpuPeriod: BigInt(j.cpuPeriod),
    cpuQuota: BigInt(j.cpuQuota),
    cpuShares: BigInt(j.cpuShares),
    memoryLimitInBytes: BigInt(j.memoryLimitInBytes),
    oomScoreAdj: BigInt(j.oomScoreAdj),
    cpusetCpus: j.cpusetCpus,
    cpusetMems: j.cpusetMems,
    hugepageLimits: j.hugepageLimits.map((h) => ({ pageSize: h.pageSize, limit: BigInt(h.limit) })),
    unified: { ...j.unified },
    memorySwapLimitInBytes: BigInt(j.memorySwapLimitInBytes),
  };
}

export function mountToJson(m: Mount): MountJson {
  return {
    containerPath: m.containerPath,
    hostPath: m.hostPath,
    readonly: m.readonly,
    selinuxRelabel: m.selinuxRelabel,
    propagation: m.propagation,
    recursiveReadOnly: m.recursiveReadOnly,
  };
}

export function mountFromJson(m: MountJson): Mount {
  return { ...m, uidMappings: [], gidMappings: [], image: undefined, imageSubPath: '' };
}

/** One image volume of a container, as its record keeps it. */
export interface ImageVolume {
  /** Its index in the CreateContainer request's mounts. */
  index: number;
  /** The image as the request named it. */
  image: string;
  imageId: string;
  /** Unpacked layer directories, base layer first. */
  layers: string[];
  /** The path in the image to bind ('' for all of it). */
  subPath: string;
}
