// CheckpointContainer: a running container dumped with CRIU into an archive at `location`.
import type { CheckpointContainerRequest, CheckpointContainerResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';

export const checkpointContainer: UnaryRpc<CheckpointContainerRequest, CheckpointContainerResponse> = async (ctx, request) => {
  await ctx.containers.checkpoint(request.containerId, request.location);
  return {};
};
