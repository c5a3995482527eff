// ListContainerStats: Usage of many containers. Not built yet: answers UNIMPLEMENTED.
import type { ListContainerStatsRequest, ListContainerStatsResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const listContainerStats: UnaryRpc<ListContainerStatsRequest, ListContainerStatsResponse> = async () => unimplemented('ListContainerStats', 'container stats are', 'pods');
