// CreateContainer: overlay rootfs, OCI spec (adjusted by node plugins, NRI), and the record. A plugin
// connecting meanwhile is synchronized only once the call is done (and PostCreateContainer told).
import type { CreateContainerRequest, CreateContainerResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';

export const createContainer: UnaryRpc<CreateContainerRequest, CreateContainerResponse> = async (ctx, request) => {
  const release = await ctx.nri.blockSync();
  try {
    const containerId = await ctx.containers.create(request);
    await ctx.nri.postCreateContainer(containerId);
    return { containerId };
  } finally {
    release();
  }
};
