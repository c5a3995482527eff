// StopPodSandbox: Stops a pod's processes and releases its network. Not built yet: answers UNIMPLEMENTED.
import type { StopPodSandboxRequest, StopPodSandboxResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const stopPodSandbox: UnaryRpc<StopPodSandboxRequest, StopPodSandboxResponse> = async () => unimplemented('StopPodSandbox', 'pod sandboxes are', 'pods');
