// GetContainerEvents: Streams container lifecycle events. Not built yet: answers UNIMPLEMENTED.
import type { GetEventsRequest, ContainerEventResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { ServerStreamingRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const getContainerEvents: ServerStreamingRpc<GetEventsRequest, ContainerEventResponse> = async function* () {
  unimplemented('GetContainerEvents', 'container events are', 'pods');
};
