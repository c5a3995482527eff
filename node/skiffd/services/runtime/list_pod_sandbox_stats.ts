// ListPodSandboxStats: Usage of many pods. Not built yet: answers UNIMPLEMENTED.
import type { ListPodSandboxStatsRequest, ListPodSandboxStatsResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const listPodSandboxStats: UnaryRpc<ListPodSandboxStatsRequest, ListPodSandboxStatsResponse> = async () => unimplemented('ListPodSandboxStats', 'pod stats are', 'pods');
