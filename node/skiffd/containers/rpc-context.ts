// The container subsystem as RPC handlers reach it.
import { ServerError, Status } from 'nice-grpc-common';
import type { DaemonContext } from '../context.ts';
import type { ContainerManager } from './manager.ts';

export function containersOf(ctx: DaemonContext): ContainerManager {
  const containers = ctx.containers;
  if (!containers) throw new ServerError(Status.UNAVAILABLE, 'the container subsystem is not running');
  return containers;
}
