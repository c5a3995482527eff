// StreamPodSandboxes: Lists pods in chunks. Not built yet: answers UNIMPLEMENTED.
import type { StreamPodSandboxesRequest, StreamPodSandboxesResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { ServerStreamingRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const streamPodSandboxes: ServerStreamingRpc<StreamPodSandboxesRequest, StreamPodSandboxesResponse> = async function* () {
  unimplemented('StreamPodSandboxes', 'pod sandboxes are', 'pods');
};
