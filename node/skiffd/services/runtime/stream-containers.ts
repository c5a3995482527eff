// StreamContainers: ListContainers in chunks.
import type { StreamContainersRequest, StreamContainersResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import { chunks } from '../chunks.ts';
import type { ServerStreamingRpc } from '../rpc.ts';
import { listContainers } from './list-containers.ts';

export const streamContainers: ServerStreamingRpc<StreamContainersRequest, StreamContainersResponse> = async function* (ctx, request, call) {
  const { containers } = await listContainers(ctx, { filter: request.filter }, call);
  for (const part of chunks(containers ?? [])) yield { containers: part };
};
