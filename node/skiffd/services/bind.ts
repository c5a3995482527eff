// Turns a table of context-first handlers into a nice-grpc service implementation. The mapped type
// makes the compiler demand one handler per RPC of the service, with the right request/response.
import type { DaemonContext } from '../context.ts';

export type Handlers<Service> = {
  [K in keyof Service]: Service[K] extends (...args: infer A) => infer R ? (ctx: DaemonContext, ...args: A) => R : never;
};

export function bindHandlers<Service>(ctx: DaemonContext, handlers: Handlers<Service>): Service {
  const service: Record<string, unknown> = {};
  for (const [name, handler] of Object.entries(handlers) as [string, (ctx: DaemonContext, ...args: unknown[]) => unknown][]) {
    service[name] = (...args: unknown[]) => handler(ctx, ...args);
  }
  return service as Service;
}
