// ListContainerStats: ContainerStats for every container matching the filter.
import type { ListContainerStatsRequest, ListContainerStatsResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import { containerStats, matchesFilter } from '../../containers/cri.ts';
import type { UnaryRpc } from '../rpc.ts';

export const listContainerStats: UnaryRpc<ListContainerStatsRequest, ListContainerStatsResponse> = async (ctx, request) => {
  const containers = ctx.containers;
  const views = (await containers.list()).filter((v) => matchesFilter(v, request.filter));
  return { stats: await Promise.all(views.map((v) => containerStats(containers, v))) };
};
