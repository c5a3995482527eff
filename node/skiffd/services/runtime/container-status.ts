// ContainerStatus: state, times, exit code and reason (from conmon's exit file), mounts, image, log path.
import type { ContainerStatusRequest, ContainerStatusResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import { toContainerStatus, verboseInfo } from '../../containers/cri.ts';
import type { UnaryRpc } from '../rpc.ts';

export const containerStatus: UnaryRpc<ContainerStatusRequest, ContainerStatusResponse> = async (ctx, request) => {
  const containers = ctx.containers;
  const view = await containers.status(request.containerId);
  return { status: toContainerStatus(view), info: request.verbose ? await verboseInfo(containers, view) : {} };
};
