// CreateContainer: overlay rootfs, OCI spec (adjusted by node plugins, NRI), and the record.
import type { CreateContainerRequest, CreateContainerResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';

export const createContainer: UnaryRpc<CreateContainerRequest, CreateContainerResponse> = async (ctx, request) => {
  const containerId = await ctx.containers.create(request);
  await ctx.nri.postCreateContainer(containerId);
  return { containerId };
};
