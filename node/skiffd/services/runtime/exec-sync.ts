// ExecSync: runs a command in a running container; output capped at 16 MiB per stream, timeout honoured.
import type { ExecSyncRequest, ExecSyncResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import type { UnaryRpc } from '../rpc.ts';

export const execSync: UnaryRpc<ExecSyncRequest, ExecSyncResponse> = async (ctx, request) => {
  const timeout = Number(request.timeout);
  return ctx.containers.execSync(request.containerId, request.cmd, Math.max(timeout, 0));
};
