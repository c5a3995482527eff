// UpdateContainerResources: `runc update`, and the new limits kept in the container record.
import type { UpdateContainerResourcesRequest, UpdateContainerResourcesResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';

export const updateContainerResources: UnaryRpc<UpdateContainerResourcesRequest, UpdateContainerResourcesResponse> = async (ctx, request) => {
  await ctx.containers.updateResources(request.containerId, request.linux);
  return {};
};
