// UpdatePodSandboxResources: Applies a pod's new resource totals. Not built yet: answers UNIMPLEMENTED.
import type { UpdatePodSandboxResourcesRequest, UpdatePodSandboxResourcesResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';
import { unimplemented } from '../unimplemented.ts';

export const updatePodSandboxResources: UnaryRpc<UpdatePodSandboxResourcesRequest, UpdatePodSandboxResourcesResponse> = async () => unimplemented('UpdatePodSandboxResources', 'pod-level resources cannot be changed after the pod runs; update each container with UpdateContainerResources');
