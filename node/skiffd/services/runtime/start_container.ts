// StartContainer: Starts a created container. Not built yet: answers UNIMPLEMENTED.
import type { StartContainerRequest, StartContainerResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const startContainer: UnaryRpc<StartContainerRequest, StartContainerResponse> = async () => unimplemented('StartContainer', 'containers are', 'pods');
