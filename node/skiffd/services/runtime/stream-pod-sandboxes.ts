// StreamPodSandboxes: ListPodSandbox in chunks.
import type { StreamPodSandboxesRequest, StreamPodSandboxesResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import { chunks } from '../chunks.ts';
import type { ServerStreamingRpc } from '../rpc.ts';
import { listPodSandbox } from './list-pod-sandbox.ts';

export const streamPodSandboxes: ServerStreamingRpc<StreamPodSandboxesRequest, StreamPodSandboxesResponse> = async function* (ctx, request, call) {
  const { items } = await listPodSandbox(ctx, { filter: request.filter }, call);
  for (const podSandboxes of chunks(items ?? [])) yield { podSandboxes };
};
