// UpdatePodSandboxResources: sets the pod cgroup's CPU and memory limits to the pod's new totals.
import type { UpdatePodSandboxResourcesRequest, UpdatePodSandboxResourcesResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';

export const updatePodSandboxResources: UnaryRpc<UpdatePodSandboxResourcesRequest, UpdatePodSandboxResourcesResponse> = async (ctx, request) => {
  await ctx.pods.updateResources(request.podSandboxId, request.resources, request.overhead);
  return {};
};
