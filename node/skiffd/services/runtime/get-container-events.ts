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
import { ServerError, Status } from 'nice-grpc-common';

type Response = DeepPartial<ContainerEventResponse>;

/**
 * Events queued at most for one subscriber. A subscriber that stops reading (stuck, or gone without
 * closing its connection) would otherwise hold every event from then on, each with its pod's whole
 * status. The kubelet moves each event as it comes into a channel of its own that holds 1000; a
 * subscriber that many events behind is not keeping up, and its stream ends with RESOURCE_EXHAUSTED:
 * the kubelet's Evented PLEG then relists and resubscribes (after repeated failures it falls back to
 * relisting alone).
 */
export const SUBSCRIBER_QUEUE_MAX = 1000;

export const getContainerEvents: ServerStreamingRpc<GetEventsRequest, ContainerEventResponse> = async function* (ctx, _request, call) {
  const queue: Promise<Response>[] = [];
  let wake: (() => void) | undefined;
  let behind = false;
  const push = (describeEvent: () => Promise<Response>) => {
    if (behind) return;
    if (queue.length >= SUBSCRIBER_QUEUE_MAX) {
      // The queue and the subscription go now: the error can end the stream only once the subscriber
      // reads again (the server waits for it to take what is already in flight).
      behind = true;
      for (const dropped of queue) dropped.catch(() => {});
      queue.length = 0;
      unsubscribe();
      ctx.log.warn('a GetContainerEvents subscriber fell behind; ending its stream', { peer: call.peer, queued: SUBSCRIBER_QUEUE_MAX });
      wake?.();
      return;
    }
    queue.push(describeEvent());
    wake?.();
  };
  const onContainer = (e: ContainerEvent) => push(() => describe(ctx, e.containerId, e.type, e.createdAt, ctx.pods.get(e.podSandboxId), e.podSandboxId));
  const onPod = (e: PodSandboxEvent) => push(() => describe(ctx, e.podSandboxId, e.type, e.createdAt, e.pod, e.podSandboxId));
  const unsubscribe = () => {
    ctx.containers.events.off('event', onContainer);
    ctx.pods.events.off('event', onPod);
  };
  ctx.containers.events.on('event', onContainer);
  ctx.pods.events.on('event', onPod);
  const onAbort = () => wake?.();
  call.signal.addEventListener('abort', onAbort);
  try {
    while (!call.signal.aborted) {
      if (behind) {
        throw new ServerError(
          Status.RESOURCE_EXHAUSTED,
          `this subscriber fell behind: ${SUBSCRIBER_QUEUE_MAX} container events were waiting for it; list containers and pod sandboxes again and resubscribe`,
        );
      }
      const next = queue.shift();
      if (!next) {
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        continue;
      }
      yield await next;
    }
  } finally {
    unsubscribe();
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
