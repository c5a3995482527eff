// StopContainer: the stop signal, SIGKILL after the timeout. Idempotent: an unknown id succeeds.
import type { StopContainerRequest, StopContainerResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';

export const stopContainer: UnaryRpc<StopContainerRequest, StopContainerResponse> = async (ctx, request) => {
  const timeout = Number(request.timeout);
  await ctx.containers.stop(request.containerId, Math.max(timeout, 0));
  return {};
};
