// UpdateContainerResources: `runc update`, and the new limits kept in the container record. Node
// plugins (NRI) see the request first and may change it, and hear of the result.
import type { UpdateContainerResourcesRequest, UpdateContainerResourcesResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';

export const updateContainerResources: UnaryRpc<UpdateContainerResourcesRequest, UpdateContainerResourcesResponse> = async (ctx, request) => {
  const id = ctx.containers.get(request.containerId)?.id;
  const resources = id && request.linux ? await ctx.nri.updateContainer(id, request.linux) : request.linux;
  await ctx.containers.updateResources(request.containerId, resources);
  if (id) await ctx.nri.postUpdateContainer(id);
  return {};
};
