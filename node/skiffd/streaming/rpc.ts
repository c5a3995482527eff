// Checks shared by the Exec, Attach and PortForward RPCs before a streaming URL is handed out:
// bad requests fail here with a gRPC status, not later on the client's stream.
import { ServerError, Status } from 'nice-grpc-common';
import { ContainerState } from '../../../proto/gen/runtime/v1/api.ts';
import type { DaemonContext } from '../context.ts';
import type { StreamRequest } from './requests.ts';

export function invalid(message: string): never {
  throw new ServerError(Status.INVALID_ARGUMENT, message);
}

export function checkStreams(rpc: string, r: { stdin: boolean; stdout: boolean; stderr: boolean; tty: boolean }): void {
  if (!r.stdin && !r.stdout && !r.stderr) invalid(`${rpc}: one of stdin, stdout and stderr must be true`);
  if (r.tty && r.stderr) invalid(`${rpc}: tty and stderr cannot both be true (with a TTY, stderr is merged into stdout)`);
}

/** The container's full id, once it is known to be running. */
export async function runningContainerId(ctx: DaemonContext, rpc: string, containerId: string): Promise<string> {
  if (!containerId) invalid(`${rpc}: container_id is empty`);
  const view = await ctx.containers.status(containerId);
  if (view.state !== ContainerState.CONTAINER_RUNNING) {
    throw new ServerError(Status.FAILED_PRECONDITION, `${rpc}: container ${view.record.id.slice(0, 12)} is not running`);
  }
  return view.record.id;
}

export async function issueUrl(ctx: DaemonContext, request: StreamRequest): Promise<string> {
  let server;
  try {
    server = await ctx.streaming.open();
  } catch (err) {
    throw new ServerError(Status.UNAVAILABLE, (err as Error).message);
  }
  try {
    return server.issue(request);
  } catch (err) {
    throw new ServerError(Status.RESOURCE_EXHAUSTED, (err as Error).message);
  }
}
