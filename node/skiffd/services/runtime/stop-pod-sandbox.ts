// StopPodSandbox: kills the pod's containers and its PID-namespace init, releases the network (CNI DEL).
// Idempotent, also for ids that are already gone. Node plugins (NRI) hear of it from inside the stop
// (node/skiffd/pods/stop.ts); the call answers once they have.
import type { StopPodSandboxRequest, StopPodSandboxResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';

export const stopPodSandbox: UnaryRpc<StopPodSandboxRequest, StopPodSandboxResponse> = async (ctx, request) => {
  await ctx.pods.stop(request.podSandboxId);
  await ctx.nri.flush();
  return {};
};
