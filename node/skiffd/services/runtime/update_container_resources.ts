// UpdateContainerResources: Changes a container's cgroup limits. Not built yet: answers UNIMPLEMENTED.
import type { UpdateContainerResourcesRequest, UpdateContainerResourcesResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const updateContainerResources: UnaryRpc<UpdateContainerResourcesRequest, UpdateContainerResourcesResponse> = async () => unimplemented('UpdateContainerResources', 'container resource updates are', 'pods');
