// The gRPC server on its unix socket: socket hygiene (stale file replaced, live daemon refused,
// mode 0660) and a middleware that turns any handler exception into a logged gRPC error, so no
// request can take the daemon down.
import { chmod, lstat, mkdir, unlink } from 'node:fs/promises';
import { connect } from 'node:net';
import { dirname } from 'node:path';
import { createServer, type Server } from 'nice-grpc';
import { ServerError, Status, type CallContext, type ServerMiddlewareCall } from 'nice-grpc-common';
import type { Logger } from './logger.ts';
import type { DaemonMetrics } from './metrics.ts';

/** Startup failed for a reason the operator must fix; the message says what. */
export class StartupError extends Error {
  override name = 'StartupError';
}

const SOCKET_MODE = 0o660;
/** Kubelet's own limit for CRI messages; grpc-js would otherwise refuse requests over 4 MiB. */
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

function isAbortError(err: unknown): boolean {
  return err instanceof Error && err.name === 'AbortError';
}

/**
 * Logs every call (debug), turns stray exceptions into INTERNAL errors, and ends server streams when
 * the daemon shuts down: their handlers see `call.signal` abort, so a long-lived stream (container
 * events) finishes instead of holding up the drain; the client reconnects to the next daemon.
 */
export function errorMiddleware(log: Logger, shutdown?: AbortSignal, metrics?: DaemonMetrics) {
  return async function* rpcErrors<Req, Res>(call: ServerMiddlewareCall<Req, Res>, context: CallContext) {
    const method = call.method.path;
    const started = performance.now();
    if (shutdown && call.method.responseStream) context = { ...context, signal: AbortSignal.any([context.signal, shutdown]) };
    try {
      const result = yield* call.next(call.request, context);
      metrics?.call(method, 'OK', (performance.now() - started) / 1000);
      if (log.enabled('debug')) log.debug('rpc', { method, ms: (performance.now() - started).toFixed(2) });
      return result;
    } catch (err) {
      metrics?.call(method, isAbortError(err) ? 'CANCELLED' : err instanceof ServerError ? Status[err.code] : 'INTERNAL', (performance.now() - started) / 1000);
      if (isAbortError(err)) throw err;
      if (err instanceof ServerError) {
        const level = err.code === Status.UNIMPLEMENTED || err.code === Status.NOT_FOUND ? 'debug' : 'info';
        log[level]('rpc error', { method, code: Status[err.code], details: err.details });
        throw err;
      }
      log.error('rpc handler failed', { method, err: err instanceof Error ? (err.stack ?? err.message) : String(err) });
      throw new ServerError(Status.INTERNAL, `${call.method.path}: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
}

export function createGrpcServer(log: Logger, shutdown?: AbortSignal, metrics?: DaemonMetrics) {
  return createServer({
    'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
    // Nothing reads channelz here; keeping its per-call counters costs on every call.
    'grpc.enable_channelz': 0,
  }).use(errorMiddleware(log, shutdown, metrics));
}

/** Resolves true when something accepts connections on the socket. */
function socketAnswers(path: string, timeoutMs = 2000): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const sock = connect({ path });
    const timer = setTimeout(() => {
      sock.destroy();
      resolve(true); // a listener with a full backlog is still alive
    }, timeoutMs);
    sock.once('connect', () => {
      clearTimeout(timer);
      sock.destroy();
      resolve(true);
    });
    sock.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      if (err.code === 'ECONNREFUSED' || err.code === 'ENOENT') resolve(false);
      else reject(new StartupError(`cannot check whether ${path} is in use: ${err.message}`));
    });
  });
}

/** Makes `path` free to bind: creates its directory, removes a stale socket, refuses a live one. */
export async function prepareSocketPath(path: string, log: Logger): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o755 });
  let isSocket: boolean;
  try {
    isSocket = (await lstat(path)).isSocket();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (!isSocket) throw new StartupError(`${path} exists and is not a socket; remove it or choose another --listen`);
  if (await socketAnswers(path)) {
    throw new StartupError(`another process is already serving on ${path} (is skiffd running?); stop it or choose another --listen`);
  }
  await unlink(path);
  log.info('removed stale socket', { socket: path });
}

/** Binds the server to the unix socket with mode 0660 from the first moment it exists. */
export async function listenUnix(server: Server, path: string): Promise<void> {
  const previous = process.umask(0o117);
  try {
    await server.listen(`unix://${path}`);
  } catch (err) {
    throw new StartupError(`cannot listen on ${path}: ${(err as Error).message}`);
  } finally {
    process.umask(previous);
  }
  await chmod(path, SOCKET_MODE);
}
