// PodSandboxStatus: Reports one pod. Not built yet: answers UNIMPLEMENTED.
import type { PodSandboxStatusRequest, PodSandboxStatusResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const podSandboxStatus: UnaryRpc<PodSandboxStatusRequest, PodSandboxStatusResponse> = async () => unimplemented('PodSandboxStatus', 'pod sandboxes are', 'pods');
