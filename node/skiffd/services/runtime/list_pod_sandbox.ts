// ListPodSandbox: Lists pods. Not built yet: answers UNIMPLEMENTED.
import type { ListPodSandboxRequest, ListPodSandboxResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const listPodSandbox: UnaryRpc<ListPodSandboxRequest, ListPodSandboxResponse> = async () => unimplemented('ListPodSandbox', 'pod sandboxes are', 'pods');
