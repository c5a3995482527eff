// StartContainer: `runc start` on a created container (node plugins, NRI, hear of it just before).
import type { StartContainerRequest, StartContainerResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';

export const startContainer: UnaryRpc<StartContainerRequest, StartContainerResponse> = async (ctx, request) => {
  await ctx.containers.start(request.containerId);
  await ctx.nri.postStartContainer(ctx.containers.get(request.containerId)?.id ?? request.containerId);
  return {};
};
