// Attach: checks the request and the container, then hands out a single-use URL on the streaming
// server joined to the container's stdio through conmon (node/skiffd/streaming/).
import type { AttachRequest, AttachResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import { ServerError, Status } from 'nice-grpc-common';
import { checkStreams, issueUrl, runningContainerId } from '../../streaming/rpc.ts';
import type { UnaryRpc } from '../rpc.ts';

export const attach: UnaryRpc<AttachRequest, AttachResponse> = async (ctx, request) => {
  checkStreams('Attach', request);
  // No SEQPACKET add-on on this node: the operator must supply one, so retrying cannot help.
  const missing = ctx.streaming.attachMissing();
  if (missing) throw new ServerError(Status.FAILED_PRECONDITION, `Attach is not available on this node: ${missing.message}`);
  const containerId = await runningContainerId(ctx, 'Attach', request.containerId);
  const url = await issueUrl(ctx, { kind: 'attach', containerId, tty: request.tty, stdin: request.stdin, stdout: request.stdout, stderr: request.stderr });
  return { url };
};
