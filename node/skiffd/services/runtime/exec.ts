// Exec: checks the request and the container, then hands out a single-use URL on the streaming
// server where the client runs the command (node/skiffd/streaming/).
import type { ExecRequest, ExecResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import { checkStreams, invalid, issueUrl, runningContainerId } from '../../streaming/rpc.ts';
import type { UnaryRpc } from '../rpc.ts';

export const exec: UnaryRpc<ExecRequest, ExecResponse> = async (ctx, request) => {
  if (request.cmd.length === 0 || request.cmd[0] === '') invalid('Exec: cmd is empty');
  checkStreams('Exec', request);
  const containerId = await runningContainerId(ctx, 'Exec', request.containerId);
  const url = await issueUrl(ctx, {
    kind: 'exec',
    containerId,
    cmd: [...request.cmd],
    tty: request.tty,
    stdin: request.stdin,
    stdout: request.stdout,
    stderr: request.stderr,
  });
  return { url };
};
