// RunPodSandbox: Creates a pod sandbox: namespaces, network, cgroup. Not built yet: answers UNIMPLEMENTED.
import type { RunPodSandboxRequest, RunPodSandboxResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const runPodSandbox: UnaryRpc<RunPodSandboxRequest, RunPodSandboxResponse> = async () => unimplemented('RunPodSandbox', 'pod sandboxes are', 'pods');
