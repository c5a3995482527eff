// PortForward: checks the pod and the ports, then hands out a single-use URL on the streaming
// server that forwards connections into the pod's network namespace (node/skiffd/streaming/).
import { ServerError, Status } from 'nice-grpc-common';
import type { PortForwardRequest, PortForwardResponse } from '../../../../proto/gen/runtime/v1/api.ts';
import { invalid, issueUrl } from '../../streaming/rpc.ts';
import type { UnaryRpc } from '../rpc.ts';

export const portForward: UnaryRpc<PortForwardRequest, PortForwardResponse> = async (ctx, request) => {
  if (!request.podSandboxId) invalid('PortForward: pod_sandbox_id is empty');
  for (const port of request.port) if (!Number.isInteger(port) || port < 1 || port > 65535) invalid(`PortForward: port ${port} is out of range (1-65535)`);
  const pod = ctx.pods.get(request.podSandboxId);
  if (!pod) throw new ServerError(Status.NOT_FOUND, `PortForward: pod sandbox "${request.podSandboxId}" not found`);
  if (pod.state !== 'SANDBOX_READY') throw new ServerError(Status.FAILED_PRECONDITION, `PortForward: pod sandbox ${pod.id.slice(0, 12)} is not ready`);
  const url = await issueUrl(ctx, { kind: 'portforward', podSandboxId: pod.id, ports: [...request.port] });
  return { url };
};
