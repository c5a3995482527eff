// GetContainerEvents: a stream of created/started/stopped/deleted events of containers and of pod
// sandboxes (a sandbox's events carry its id as the container id). Each event carries what the
// kubelet's Evented PLEG rebuilds the pod's cached status from, as containerd sends it: the pod
// sandbox's status (its IP among it) and the status of every container of the pod. Both are taken when
// the event happens, in its order, so a removed pod's last event still describes it.
import type { ContainerEventResponse, ContainerEventType, ContainerStatus, DeepPartial, GetEventsRequest } from '../../../../proto/gen/runtime/v1/api.ts';
import { toContainerStatus } from '../../containers/cri.ts';
import type { ContainerEvent } from '../../containers/manager.ts';
import type { DaemonContext } from '../../context.ts';
import { toPodSandboxStatus } from '../../pods/cri.ts';
import type { PodSandboxEvent, PodSandboxRecord } from '../../pods/types.ts';
import type { ServerStreamingRpc } from '../rpc.ts';

type Response = DeepPartial<ContainerEventResponse>;

export const getContainerEvents: ServerStreamingRpc<GetEventsRequest, ContainerEventResponse> = async function* (ctx, _request, call) {
  const queue: Promise<Response>[] = [];
  let wake: (() => void) | undefined;
  const push = (response: Promise<Response>) => {
    queue.push(response);
    wake?.();
  };
  const onContainer = (e: ContainerEvent) => push(describe(ctx, e.containerId, e.type, e.createdAt, ctx.pods.get(e.podSandboxId), e.podSandboxId));
  const onPod = (e: PodSandboxEvent) => push(describe(ctx, e.podSandboxId, e.type, e.createdAt, e.pod, e.podSandboxId));
  ctx.containers.events.on('event', onContainer);
  ctx.pods.events.on('event', onPod);
  const onAbort = () => wake?.();
  call.signal.addEventListener('abort', onAbort);
  try {
    while (!call.signal.aborted) {
      const next = queue.shift();
      if (!next) {
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        continue;
      }
      yield await next;
    }
  } finally {
    ctx.containers.events.off('event', onContainer);
    ctx.pods.events.off('event', onPod);
    call.signal.removeEventListener('abort', onAbort);
  }
};

/** The event with its pod's status, read now (the sandbox's synchronously, before anything can change it). */
async function describe(
  ctx: DaemonContext,
  id: string,
  type: ContainerEventType,
  createdAt: bigint,
  pod: PodSandboxRecord | undefined,
  podSandboxId: string,
): Promise<Response> {
  const podSandboxStatus = pod ? toPodSandboxStatus(pod) : undefined;
  const views = await Promise.all(ctx.containers.listByPod(podSandboxId).map((r) => ctx.containers.status(r.id).catch(() => undefined)));
  const containersStatuses: DeepPartial<ContainerStatus>[] = [];
  for (const view of views) if (view) containersStatuses.push(toContainerStatus(view));
  return { containerId: id, containerEventType: type, createdAt, ...(podSandboxStatus ? { podSandboxStatus } : {}), containersStatuses };
}
