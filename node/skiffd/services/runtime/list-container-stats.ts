// ListContainerStats: ContainerStats for every container matching the filter.
import type { ListContainerStatsRequest, ListContainerStatsResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import { containerStats, matchesFilter } from '../../containers/cri.ts';
import { containersOf } from '../../containers/rpc-context.ts';
import type { UnaryRpc } from '../rpc.ts';

export const listContainerStats: UnaryRpc<ListContainerStatsRequest, ListContainerStatsResponse> = async (ctx, request) => {
  const containers = containersOf(ctx);
  const views = (await containers.list()).filter((v) => matchesFilter(v, request.filter));
  return { stats: await Promise.all(views.map((v) => containerStats(containers, v))) };
};
