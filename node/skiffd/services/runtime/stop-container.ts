// StopContainer: the stop signal, SIGKILL after the timeout. Idempotent: an unknown id succeeds.
// Node plugins (NRI) hear of every stop from the container's exit; the call answers once they have.
import type { StopContainerRequest, StopContainerResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';

export const stopContainer: UnaryRpc<StopContainerRequest, StopContainerResponse> = async (ctx, request) => {
  const timeout = Number(request.timeout);
  await ctx.containers.stop(request.containerId, Math.max(timeout, 0));
  await ctx.nri.flush();
  return {};
};
