// PodSandboxStats: Usage of one pod. Not built yet: answers UNIMPLEMENTED.
import type { PodSandboxStatsRequest, PodSandboxStatsResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const podSandboxStats: UnaryRpc<PodSandboxStatsRequest, PodSandboxStatsResponse> = async () => unimplemented('PodSandboxStats', 'pod stats are', 'pods');
