// ContainerStatus: Reports one container. Not built yet: answers UNIMPLEMENTED.
import type { ContainerStatusRequest, ContainerStatusResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const containerStatus: UnaryRpc<ContainerStatusRequest, ContainerStatusResponse> = async () => unimplemented('ContainerStatus', 'containers are', 'pods');
