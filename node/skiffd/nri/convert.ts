// skiffd's pods and containers as NRI shows them to plugins, filled the way containerd 2.1 fills
// them: a pod from its record and config, a container from its record and OCI spec.
import { ContainerState as CriState } from '../../../proto/gen/runtime/v1/api.ts';
import { ContainerState, type Container, type Hook, type Hooks, type LinuxNamespace, type PodSandbox } from '../../../proto/gen/nri/v1alpha1/api.ts';
import type { ContainerRecord } from '../containers/record.ts';
import type { OciHook, OciSpec } from '../oci/spec.ts';
import type { PodSandboxRecord } from '../pods/types.ts';
import { fromCriResources, fromOciResources } from './resources.ts';

const NAMESPACE_TYPES = { net: 'network', ipc: 'ipc', uts: 'uts', pid: 'pid', user: 'user' } as const;

export function podToNri(pod: PodSandboxRecord): PodSandbox {
  const namespaces: LinuxNamespace[] = [];
  for (const [key, type] of Object.entries(NAMESPACE_TYPES)) {
    const path = pod.namespaces[key as keyof typeof NAMESPACE_TYPES];
    if (path) namespaces.push({ type, path });
  }
  return {
    id: pod.id,
    name: pod.metadata.name,
    uid: pod.metadata.uid,
    namespace: pod.metadata.namespace,
    labels: { ...pod.labels },
    annotations: { ...pod.annotations },
    runtimeHandler: pod.runtimeHandler,
    linux: {
      podOverhead: fromCriResources(pod.config.linux?.overhead),
      podResources: fromCriResources(pod.config.linux?.resources),
      cgroupParent: pod.config.linux?.cgroupParent ?? '',
      cgroupsPath: pod.cgroupParent,
      namespaces,
      resources: undefined,
    },
    pid: 0,
    ips: pod.ip ? [pod.ip, ...pod.additionalIps] : [],
  };
}

export function criStateToNri(state: CriState): ContainerState {
  switch (state) {
    case CriState.CONTAINER_CREATED:
      return ContainerState.CONTAINER_CREATED;
    case CriState.CONTAINER_RUNNING:
      return ContainerState.CONTAINER_RUNNING;
    case CriState.CONTAINER_EXITED:
      return ContainerState.CONTAINER_STOPPED;
    default:
      return ContainerState.CONTAINER_UNKNOWN;
  }
}

function hookToNri(h: OciHook): Hook {
  return { path: h.path, args: h.args ?? [], env: h.env ?? [], timeout: h.timeout !== undefined ? { value: BigInt(h.timeout) } : undefined };
}

function hooksToNri(spec: OciSpec): Hooks | undefined {
  const h = spec.hooks;
  if (!h) return undefined;
  return {
    prestart: (h.prestart ?? []).map(hookToNri),
    createRuntime: (h.createRuntime ?? []).map(hookToNri),
    createContainer: (h.createContainer ?? []).map(hookToNri),
    startContainer: (h.startContainer ?? []).map(hookToNri),
    poststart: (h.poststart ?? []).map(hookToNri),
    poststop: (h.poststop ?? []).map(hookToNri),
  };
}

/** `spec` undefined: a container whose spec is gone (removed); only its record is shown. */
export function containerToNri(record: ContainerRecord, spec: OciSpec | undefined, state: ContainerState): Container {
  const s = spec;
  return {
    id: record.id,
    podSandboxId: record.podSandboxId,
    name: record.metadata.name,
    state,
    labels: { ...record.labels },
    annotations: { ...s?.annotations, ...record.annotations },
    args: [...(s?.process.args ?? [])],
    env: [...(s?.process.env ?? [])],
    mounts: (s?.mounts ?? []).map((m) => ({ destination: m.destination, type: m.type ?? '', source: m.source ?? '', options: [...(m.options ?? [])] })),
    hooks: s ? hooksToNri(s) : undefined,
    linux: s
      ? {
          namespaces: s.linux.namespaces.map((n) => ({ type: n.type, path: n.path ?? '' })),
          devices: (s.linux.devices ?? []).map((d) => ({
            path: d.path,
            type: d.type,
            major: BigInt(d.major),
            minor: BigInt(d.minor),
            fileMode: d.fileMode !== undefined ? { value: d.fileMode } : undefined,
            uid: d.uid !== undefined ? { value: d.uid } : undefined,
            gid: d.gid !== undefined ? { value: d.gid } : undefined,
          })),
          resources: fromOciResources(s.linux.resources),
          oomScoreAdj: s.process.oomScoreAdj !== undefined ? { value: BigInt(s.process.oomScoreAdj) } : undefined,
          cgroupsPath: s.linux.cgroupsPath ?? '',
        }
      : undefined,
    pid: record.pid ?? 0,
    rlimits: (s?.process.rlimits ?? []).map((l) => ({ type: l.type, hard: BigInt(l.hard), soft: BigInt(l.soft) })),
  };
}
