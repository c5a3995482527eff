// StreamContainerStats: Usage of many containers, in chunks. Not built yet: answers UNIMPLEMENTED.
import type { StreamContainerStatsRequest, StreamContainerStatsResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { ServerStreamingRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const streamContainerStats: ServerStreamingRpc<StreamContainerStatsRequest, StreamContainerStatsResponse> = async function* () {
  unimplemented('StreamContainerStats', 'container stats are', 'pods');
};
