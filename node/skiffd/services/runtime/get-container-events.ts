// GetContainerEvents: a stream of created/started/stopped/deleted events, each with the container's status.
import { ContainerEventType, type GetEventsRequest, type ContainerEventResponse, type DeepPartial } from '../../../../proto/gen/runtime/v1/api.ts';
import { toContainerStatus } from '../../containers/cri.ts';
import type { ContainerEvent } from '../../containers/manager.ts';
import type { ServerStreamingRpc } from '../rpc.ts';

export const getContainerEvents: ServerStreamingRpc<GetEventsRequest, ContainerEventResponse> = async function* (ctx, _request, call) {
  const containers = ctx.containers;
  const queue: ContainerEvent[] = [];
  let wake: (() => void) | undefined;
  const onEvent = (e: ContainerEvent) => {
    queue.push(e);
    wake?.();
  };
  containers.events.on('event', onEvent);
  const onAbort = () => wake?.();
  call.signal.addEventListener('abort', onAbort);
  try {
    while (!call.signal.aborted) {
      const event = queue.shift();
      if (!event) {
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        continue;
      }
      const response: DeepPartial<ContainerEventResponse> = {
        containerId: event.containerId,
        containerEventType: event.type,
        createdAt: event.createdAt,
        podSandboxStatus: podStatus(ctx, event.podSandboxId),
        containersStatuses: [],
      };
      if (event.type !== ContainerEventType.CONTAINER_DELETED_EVENT) {
        const view = await containers.status(event.containerId).catch(() => undefined);
        if (view) response.containersStatuses = [toContainerStatus(view)];
      }
      yield response;
    }
  } finally {
    containers.events.off('event', onEvent);
    call.signal.removeEventListener('abort', onAbort);
  }
};

function podStatus(ctx: Parameters<ServerStreamingRpc<GetEventsRequest, ContainerEventResponse>>[0], podId: string) {
  const pod = ctx.pods.get(podId);
  if (!pod) return { id: podId };
  return {
    id: pod.id,
    metadata: pod.metadata,
    state: pod.state === 'SANDBOX_READY' ? 0 : 1,
    createdAt: pod.createdAt,
    labels: pod.labels,
    annotations: pod.annotations,
    runtimeHandler: pod.runtimeHandler,
  };
}
