// StartContainer: `runc start` on a created container.
import type { StartContainerRequest, StartContainerResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';

export const startContainer: UnaryRpc<StartContainerRequest, StartContainerResponse> = async (ctx, request) => {
  await ctx.containers.start(request.containerId);
  return {};
};
