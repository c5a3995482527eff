// StreamPodSandboxStats: Usage of many pods, in chunks. Not built yet: answers UNIMPLEMENTED.
import type { StreamPodSandboxStatsRequest, StreamPodSandboxStatsResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { ServerStreamingRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const streamPodSandboxStats: ServerStreamingRpc<StreamPodSandboxStatsRequest, StreamPodSandboxStatsResponse> = async function* () {
  unimplemented('StreamPodSandboxStats', 'pod stats are', 'pods');
};
