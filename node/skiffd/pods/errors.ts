// Pod errors carry their gRPC status so the RPC layer passes them through unchanged.
import { ServerError, Status } from 'nice-grpc-common';
import { CniNotReadyError, CniPluginError } from '../network/cni.ts';

export function notFound(id: string): never {
  throw new ServerError(Status.NOT_FOUND, `pod sandbox "${id}" not found`);
}

/** Every pod RPC names its pod. */
export function requireId(idOrPrefix: string): void {
  if (!idOrPrefix) throw new ServerError(Status.INVALID_ARGUMENT, 'pod_sandbox_id is required');
}

/** Errors from below become gRPC errors a client can act on. */
export function toServerError(err: unknown, action: string): ServerError {
  if (err instanceof ServerError) return err;
  if (err instanceof CniNotReadyError) return new ServerError(Status.FAILED_PRECONDITION, `${action}: network not ready: ${err.message}`);
  if (err instanceof CniPluginError) return new ServerError(Status.INTERNAL, `${action}: ${err.message}`);
  return new ServerError(Status.INTERNAL, `${action}: ${(err as Error)?.message ?? String(err)}`);
}

export { ServerError, Status };
