// ContainerStats: Usage of one container. Not built yet: answers UNIMPLEMENTED.
import type { ContainerStatsRequest, ContainerStatsResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const containerStats: UnaryRpc<ContainerStatsRequest, ContainerStatsResponse> = async () => unimplemented('ContainerStats', 'container stats are', 'pods');
