// ReopenContainerLog: Reopens a container's log after rotation. Not built yet: answers UNIMPLEMENTED.
import type { ReopenContainerLogRequest, ReopenContainerLogResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const reopenContainerLog: UnaryRpc<ReopenContainerLogRequest, ReopenContainerLogResponse> = async () => unimplemented('ReopenContainerLog', 'container logs are', 'pods');
