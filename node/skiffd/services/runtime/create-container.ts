// CreateContainer: overlay rootfs, OCI spec, and the container created under its conmon monitor.
import type { CreateContainerRequest, CreateContainerResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import { containersOf } from '../../containers/rpc-context.ts';
import type { UnaryRpc } from '../rpc.ts';

export const createContainer: UnaryRpc<CreateContainerRequest, CreateContainerResponse> = async (ctx, request) => ({
  containerId: await containersOf(ctx).create(request),
});
