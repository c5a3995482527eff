// PodSandboxStats: CPU and memory of the pod's cgroup, its process count and network counters.
import type { PodSandboxStatsRequest, PodSandboxStatsResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';

export const podSandboxStats: UnaryRpc<PodSandboxStatsRequest, PodSandboxStatsResponse> = async (ctx, request) => ({
  stats: await ctx.pods.stats(request.podSandboxId),
});
