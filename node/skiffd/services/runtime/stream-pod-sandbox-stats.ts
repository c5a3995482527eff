// StreamPodSandboxStats: ListPodSandboxStats in chunks.
import type { StreamPodSandboxStatsRequest, StreamPodSandboxStatsResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import { chunks } from '../chunks.ts';
import type { ServerStreamingRpc } from '../rpc.ts';
import { listPodSandboxStats } from './list-pod-sandbox-stats.ts';

export const streamPodSandboxStats: ServerStreamingRpc<StreamPodSandboxStatsRequest, StreamPodSandboxStatsResponse> = async function* (ctx, request, call) {
  const { stats } = await listPodSandboxStats(ctx, { filter: request.filter }, call);
  for (const podSandboxStats of chunks(stats ?? [])) yield { podSandboxStats };
};
