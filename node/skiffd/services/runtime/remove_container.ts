// RemoveContainer: Removes a container. Not built yet: answers UNIMPLEMENTED.
import type { RemoveContainerRequest, RemoveContainerResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const removeContainer: UnaryRpc<RemoveContainerRequest, RemoveContainerResponse> = async () => unimplemented('RemoveContainer', 'containers are', 'pods');
