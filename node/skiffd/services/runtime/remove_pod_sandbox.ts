// RemovePodSandbox: Removes a pod and its containers. Not built yet: answers UNIMPLEMENTED.
import type { RemovePodSandboxRequest, RemovePodSandboxResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const removePodSandbox: UnaryRpc<RemovePodSandboxRequest, RemovePodSandboxResponse> = async () => unimplemented('RemovePodSandbox', 'pod sandboxes are', 'pods');
