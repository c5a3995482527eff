// StopContainer: Stops a container with a grace period. Not built yet: answers UNIMPLEMENTED.
import type { StopContainerRequest, StopContainerResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const stopContainer: UnaryRpc<StopContainerRequest, StopContainerResponse> = async () => unimplemented('StopContainer', 'containers are', 'pods');
