// ListContainers: every container, filtered by id (prefix), state, pod id (prefix) and labels.
import type { ListContainersRequest, ListContainersResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import { matchesFilter, toContainer } from '../../containers/cri.ts';
import type { UnaryRpc } from '../rpc.ts';

export const listContainers: UnaryRpc<ListContainersRequest, ListContainersResponse> = async (ctx, request) => {
  const views = await ctx.containers.list();
  return { containers: views.filter((v) => matchesFilter(v, request.filter)).map(toContainer) };
};
