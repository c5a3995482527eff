// ContainerStats: CPU and memory from the container's cgroup (v1, v2 or hybrid), writable layer usage.
import type { ContainerStatsRequest, ContainerStatsResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import { containerStats as statsOf } from '../../containers/cri.ts';
import type { UnaryRpc } from '../rpc.ts';

export const containerStats: UnaryRpc<ContainerStatsRequest, ContainerStatsResponse> = async (ctx, request) => {
  const containers = ctx.containers;
  return { stats: await statsOf(containers, await containers.status(request.containerId)) };
};
