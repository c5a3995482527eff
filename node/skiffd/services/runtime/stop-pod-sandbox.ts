// StopPodSandbox: kills the pod's containers and its PID-namespace init, releases the network (CNI DEL).
// Idempotent, also for ids that are already gone.
import type { StopPodSandboxRequest, StopPodSandboxResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';

export const stopPodSandbox: UnaryRpc<StopPodSandboxRequest, StopPodSandboxResponse> = async (ctx, request) => {
  await ctx.pods.stop(request.podSandboxId);
  return {};
};
