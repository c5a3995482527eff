// RemoveContainer: kills it if needed, deletes runtime state, the rootfs mount and its directories. Idempotent.
// Node plugins (NRI) hear of it from the container's removal; the call answers once they have.
import type { RemoveContainerRequest, RemoveContainerResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';

export const removeContainer: UnaryRpc<RemoveContainerRequest, RemoveContainerResponse> = async (ctx, request) => {
  await ctx.containers.remove(request.containerId);
  await ctx.nri.flush();
  return {};
};
