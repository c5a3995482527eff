// PodSandboxStats: CPU and memory of the pod's cgroup, its process count, network counters and the
// stats of each of its containers.
import type { PodSandboxStatsRequest, PodSandboxStatsResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { withContainerStats } from './pod-container-stats.ts';

export const podSandboxStats: UnaryRpc<PodSandboxStatsRequest, PodSandboxStatsResponse> = async (ctx, request) => {
  const [stats] = await withContainerStats(ctx, [await ctx.pods.stats(request.podSandboxId)]);
  return { stats };
};
