// The daemon's streaming server, one per daemon context. It starts on first use (or when the daemon
// calls openStreaming at startup, which also validates [streaming] address/port early) and stops
// with closeStreaming.
import type { DaemonContext } from '../context.ts';
import { makeStreamingBackend } from './backends/index.ts';
import { StreamingServer } from './server.ts';

export { StreamingServer } from './server.ts';
export type { StreamRequest, ExecStreamRequest, AttachStreamRequest, PortForwardStreamRequest } from './requests.ts';

const servers = new WeakMap<DaemonContext, Promise<StreamingServer>>();

export function openStreaming(ctx: DaemonContext): Promise<StreamingServer> {
  let server = servers.get(ctx);
  if (!server) {
    server = start(ctx);
    servers.set(ctx, server);
    // A failed start is reported to this caller; the next call tries again.
    server.catch(() => servers.delete(ctx));
  }
  return server;
}

async function start(ctx: DaemonContext): Promise<StreamingServer> {
  const log = ctx.log.child({ subsystem: 'streaming' });
  const server = new StreamingServer({
    address: ctx.config.streaming.address,
    port: ctx.config.streaming.port,
    backend: makeStreamingBackend({ containers: () => ctx.containers, pods: () => ctx.pods }),
    log,
  });
  try {
    await server.listen();
  } catch (err) {
    throw new Error(`streaming server cannot listen on ${ctx.config.streaming.address}:${ctx.config.streaming.port} ([streaming] address/port): ${(err as Error).message}`);
  }
  server.unref();
  log.info('streaming server listening', { url: server.url });
  return server;
}

export async function closeStreaming(ctx: DaemonContext): Promise<void> {
  const server = servers.get(ctx);
  servers.delete(ctx);
  if (server) await (await server.catch(() => undefined))?.close();
}
