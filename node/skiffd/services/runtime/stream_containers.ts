// StreamContainers: Lists containers in chunks. Not built yet: answers UNIMPLEMENTED.
import type { StreamContainersRequest, StreamContainersResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { ServerStreamingRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const streamContainers: ServerStreamingRpc<StreamContainersRequest, StreamContainersResponse> = async function* () {
  unimplemented('StreamContainers', 'containers are', 'pods');
};
