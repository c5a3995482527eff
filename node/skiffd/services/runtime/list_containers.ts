// ListContainers: Lists containers. Not built yet: answers UNIMPLEMENTED.
import type { ListContainersRequest, ListContainersResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const listContainers: UnaryRpc<ListContainersRequest, ListContainersResponse> = async () => unimplemented('ListContainers', 'containers are', 'pods');
