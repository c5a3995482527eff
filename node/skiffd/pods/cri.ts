// Pod records in the CRI's wire shapes (PodSandbox, PodSandboxStatus), and the request filters back.
import { ServerError, Status } from 'nice-grpc-common';
import {
  NamespaceMode,
  PodSandboxState,
  type DeepPartial,
  type PodSandbox,
  type PodSandboxFilter,
  type PodSandboxStatus,
} from '../../../proto/gen/runtime/v1/api.ts';
import type { PodSandboxFilterSpec } from './types.ts';
import type { NamespaceModeName, PodSandboxRecord, PodState } from './types.ts';

export function stateToCri(state: PodState): PodSandboxState {
  return state === 'SANDBOX_READY' ? PodSandboxState.SANDBOX_READY : PodSandboxState.SANDBOX_NOTREADY;
}

function modeToCri(mode: NamespaceModeName): NamespaceMode {
  return NamespaceMode[mode];
}

export function toPodSandbox(pod: PodSandboxRecord): DeepPartial<PodSandbox> {
  return {
    id: pod.id,
    metadata: { ...pod.metadata },
    state: stateToCri(pod.state),
    createdAt: pod.createdAt,
    labels: pod.labels,
    annotations: pod.annotations,
    runtimeHandler: pod.runtimeHandler,
  };
}

export function toPodSandboxStatus(pod: PodSandboxRecord): DeepPartial<PodSandboxStatus> {
  return {
    id: pod.id,
    metadata: { ...pod.metadata },
    state: stateToCri(pod.state),
    createdAt: pod.createdAt,
    network: { ip: pod.ip, additionalIps: pod.additionalIps.map((ip) => ({ ip })) },
    linux: {
      namespaces: {
        options: {
          network: modeToCri(pod.networkMode),
          pid: modeToCri(pod.pidMode),
          ipc: modeToCri(pod.ipcMode),
          targetId: '',
          usernsOptions: pod.config.linux?.securityContext?.namespaceOptions?.usernsOptions,
        },
      },
    },
    labels: pod.labels,
    annotations: pod.annotations,
    runtimeHandler: pod.runtimeHandler,
  };
}

export function filterSpec(filter: PodSandboxFilter | undefined): PodSandboxFilterSpec {
  if (!filter) return {};
  const spec: PodSandboxFilterSpec = {};
  if (filter.id) spec.id = filter.id;
  if (filter.state) {
    if (filter.state.state === PodSandboxState.SANDBOX_READY) spec.state = 'SANDBOX_READY';
    else if (filter.state.state === PodSandboxState.SANDBOX_NOTREADY) spec.state = 'SANDBOX_NOTREADY';
    else throw new ServerError(Status.INVALID_ARGUMENT, `filter.state.state ${filter.state.state} is not a pod sandbox state`);
  }
  if (Object.keys(filter.labelSelector).length > 0) spec.labelSelector = filter.labelSelector;
  return spec;
}
