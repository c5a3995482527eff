// ListPodSandbox: all pods, filtered by id (a prefix is enough), state and labels (all must match).
import type { ListPodSandboxRequest, ListPodSandboxResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import { filterSpec, toPodSandbox } from '../../pods/cri.ts';
import type { UnaryRpc } from '../rpc.ts';

export const listPodSandbox: UnaryRpc<ListPodSandboxRequest, ListPodSandboxResponse> = async (ctx, request) => {
  const pods = await ctx.pods.filter(filterSpec(request.filter));
  return { items: pods.map(toPodSandbox) };
};
