// CreateContainer: overlay rootfs, OCI spec, and the container created under its conmon monitor.
import type { CreateContainerRequest, CreateContainerResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';

export const createContainer: UnaryRpc<CreateContainerRequest, CreateContainerResponse> = async (ctx, request) => ({
  containerId: await ctx.containers.create(request),
});
