// ReopenContainerLog: tells conmon (through its ctl FIFO) to reopen the log after rotation.
import type { ReopenContainerLogRequest, ReopenContainerLogResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';

export const reopenContainerLog: UnaryRpc<ReopenContainerLogRequest, ReopenContainerLogResponse> = async (ctx, request) => {
  await ctx.containers.reopenLog(request.containerId);
  return {};
};
