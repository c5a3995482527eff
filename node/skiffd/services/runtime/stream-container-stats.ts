// StreamContainerStats: ListContainerStats in chunks.
import type { StreamContainerStatsRequest, StreamContainerStatsResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import { chunks } from '../chunks.ts';
import type { ServerStreamingRpc } from '../rpc.ts';
import { listContainerStats } from './list-container-stats.ts';

export const streamContainerStats: ServerStreamingRpc<StreamContainerStatsRequest, StreamContainerStatsResponse> = async function* (ctx, request, call) {
  const { stats } = await listContainerStats(ctx, { filter: request.filter }, call);
  for (const containerStats of chunks(stats ?? [])) yield { containerStats };
};
