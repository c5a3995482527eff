// CreateContainer: Creates a container in a pod. Not built yet: answers UNIMPLEMENTED.
import type { CreateContainerRequest, CreateContainerResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const createContainer: UnaryRpc<CreateContainerRequest, CreateContainerResponse> = async () => unimplemented('CreateContainer', 'containers are', 'pods');
