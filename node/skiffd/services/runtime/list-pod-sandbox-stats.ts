// ListPodSandboxStats: PodSandboxStats for every pod matching the filter (id prefix, labels), each with
// its containers' stats.
import type { ListPodSandboxStatsRequest, ListPodSandboxStatsResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { withContainerStats } from './pod-container-stats.ts';

export const listPodSandboxStats: UnaryRpc<ListPodSandboxStatsRequest, ListPodSandboxStatsResponse> = async (ctx, request) => {
  const filter = request.filter;
  const stats = await ctx.pods.listStats({
    ...(filter?.id ? { id: filter.id } : {}),
    ...(filter && Object.keys(filter.labelSelector).length > 0 ? { labelSelector: filter.labelSelector } : {}),
  });
  return { stats: await withContainerStats(ctx, stats) };
};
