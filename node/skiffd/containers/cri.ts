// Container records -> CRI messages.
import {
  ContainerState,
  type Container,
  type ContainerFilter,
  type ContainerStats,
  type ContainerStatsFilter,
  type ContainerStatus,
  type DeepPartial,
} from '../../../proto/gen/runtime/v1/api.ts';
import { totalmem } from 'node:os';
import { nowNs } from '../util/clock.ts';
import { availableBytes, criIo, criPsi, criSwap } from '../cgroups/cri-usage.ts';
import { readPressure } from '../cgroups/pressure.ts';
import { readCpu, readMemory } from '../cgroups/stats.ts';
import type { ContainerManager, ContainerView } from './manager.ts';
import { mountFromJson, resourcesFromJson, type ContainerRecord } from './record.ts';

const ns = (s: string | undefined): bigint => (s ? BigInt(s) : 0n);

function imageSpec(r: ContainerRecord, image = r.image.image) {
  return {
    image,
    annotations: r.image.annotations,
    userSpecifiedImage: r.image.userSpecifiedImage,
    runtimeHandler: r.image.runtimeHandler,
    imageRef: '',
  };
}

export function toContainer(v: ContainerView): DeepPartial<Container> {
  const r = v.record;
  return {
    id: r.id,
    podSandboxId: r.podSandboxId,
    metadata: r.metadata,
    image: imageSpec(r),
    imageRef: r.imageRef,
    imageId: r.imageId,
    state: v.state,
    createdAt: ns(r.createdAt),
    labels: r.labels,
    annotations: r.annotations,
  };
}

export function toContainerStatus(v: ContainerView): DeepPartial<ContainerStatus> {
  const r = v.record;
  const exited = v.state === ContainerState.CONTAINER_EXITED;
  return {
    id: r.id,
    metadata: r.metadata,
    state: v.state,
    createdAt: ns(r.createdAt),
    startedAt: ns(r.startedAt),
    finishedAt: exited ? ns(r.finishedAt) : 0n,
    exitCode: exited ? (r.exitCode ?? 0) : 0,
    // By tag when the image has one (ListContainers keeps the name the container was created with).
    image: imageSpec(r, r.imageTag || r.image.image),
    imageRef: r.imageRef,
    imageId: r.imageId,
    reason: exited ? (r.reason ?? '') : '',
    message: r.message ?? '',
    labels: r.labels,
    annotations: r.annotations,
    mounts: r.mounts.map(mountFromJson),
    logPath: r.logPath,
    resources: { linux: resourcesFromJson(r.resources) },
    user: { linux: { uid: BigInt(r.user.uid), gid: BigInt(r.user.gid), supplementalGroups: r.user.additionalGids.map(BigInt) } },
    stopSignal: r.criStopSignal,
  };
}

/** The verbose `info` map: one "info" key holding JSON, as containerd does. */
export async function verboseInfo(manager: ContainerManager, v: ContainerView): Promise<Record<string, string>> {
  const r = v.record;
  const paths = manager.paths(r.id);
  const info = JSON.stringify({
    sandboxID: r.podSandboxId,
    pid: v.state === ContainerState.CONTAINER_RUNNING ? r.pid : 0,
    conmonPid: r.conmonPid,
    runtime: r.runtime,
    bundle: paths.bundle,
    rootfs: paths.merged,
    cgroupsPath: r.cgroupsPath,
    stopSignal: r.stopSignalName,
    logPath: r.conmonLogPath,
  });
  // The spec goes in as the JSON text it is on disk: parsing and printing it again is most of a verbose call.
  const spec = (await manager.runtimeSpecText(r.id))?.trim();
  return { info: spec ? `${info.slice(0, -1)},"runtimeSpec":${spec}}` : info };
}

export function matchesFilter(v: ContainerView, filter: ContainerFilter | ContainerStatsFilter | undefined): boolean {
  if (!filter) return true;
  const r = v.record;
  if (filter.id && !r.id.startsWith(filter.id)) return false;
  if (filter.podSandboxId && !r.podSandboxId.startsWith(filter.podSandboxId)) return false;
  if ('state' in filter && filter.state && filter.state.state !== v.state) return false;
  for (const [k, val] of Object.entries(filter.labelSelector ?? {})) if (r.labels[k] !== val) return false;
  return true;
}

export async function containerStats(manager: ContainerManager, v: ContainerView): Promise<DeepPartial<ContainerStats>> {
  const r = v.record;
  const running = v.state === ContainerState.CONTAINER_RUNNING || v.state === ContainerState.CONTAINER_CREATED;
  const live = running && r.cgroupsPath ? r.cgroupsPath : undefined;
  // Stamped as the CPU reading arrives, so that the rate's interval is the readings' own.
  const [[cpu, now], memory, pressure, layer] = await Promise.all([
    (live ? readCpu(live).catch(() => undefined) : Promise.resolve(undefined)).then((c) => [c, nowNs()] as const),
    live ? readMemory(live).catch(() => undefined) : undefined,
    live ? readPressure(live).catch(() => undefined) : undefined,
    manager.writableLayerUsage(r.id),
  ]);
  let nanoCores: bigint | undefined;
  if (cpu) nanoCores = manager.cpuRate.sample(r.id, now, cpu.usageNs);
  else manager.cpuRate.forget(r.id);
  return {
    attributes: { id: r.id, metadata: r.metadata, labels: r.labels, annotations: r.annotations },
    cpu: {
      timestamp: now,
      usageCoreNanoSeconds: { value: cpu?.usageNs ?? 0n },
      usageNanoCores: nanoCores === undefined ? undefined : { value: nanoCores },
      psi: criPsi(pressure?.cpu),
    },
    memory: {
      timestamp: now,
      workingSetBytes: { value: memory?.workingSetBytes ?? 0n },
      usageBytes: { value: memory?.usageBytes ?? 0n },
      rssBytes: { value: memory?.rssBytes ?? 0n },
      pageFaults: { value: memory?.pageFaults ?? 0n },
      majorPageFaults: { value: memory?.majorPageFaults ?? 0n },
      // Without a limit, what the node's memory leaves: cAdvisor takes the machine's memory as an unlimited
      // cgroup's limit, and the kubelet shows containerd's containers so.
      availableBytes: memory ? { value: availableBytes(memory.limitBytes ?? BigInt(totalmem()), memory.workingSetBytes) } : undefined,
      psi: criPsi(pressure?.memory),
    },
    swap: memory ? criSwap(memory, now) : undefined,
    io: criIo(pressure?.io, now),
    writableLayer: {
      timestamp: now,
      fsId: { mountpoint: manager.paths(r.id).upper },
      usedBytes: { value: layer.bytes },
      inodesUsed: { value: layer.inodes },
    },
  };
}
