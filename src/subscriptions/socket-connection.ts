// One served socket as graphql-ws's core and the shared path see it: send, close and onMessage (called
// as methods), keep-alive pings, and the message-size and backpressure limits.
import { CloseCode } from 'graphql-ws';

/** What a connection needs of a standard WebSocket (the WHATWG one, ws, Bun's, workerd's). */
export interface WebSocketLike {
  /** The negotiated subprotocol (workerd leaves it empty: pass `protocol` to serve()). */
  readonly protocol?: string;
  /** 0 connecting, 1 open, 2 closing, 3 closed (the standard values). */
  readonly readyState: number;
  readonly bufferedAmount?: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  addEventListener(type: 'open' | 'close', listener: (event: { code?: number; reason?: string }) => void): void;
}

const OPEN = 1;
const CLOSED = 3;

export function closeSocket(socket: WebSocketLike, code: number, reason: string): void {
  try {
    if (socket.readyState !== CLOSED) socket.close(code, reason);
  } catch {
    /* already closing */
  }
}

export interface ConnectionLimits {
  /** ms to wait for `connection_init` before closing with 4408; 0 or Infinity: forever. */
  connectionInitWaitTimeout: number;
  keepAlive: number;
  maxMessageSize: number;
  maxBufferedBytes: number;
  /** Called once the socket's subscriptions have ended, before the serve() promise settles. */
  released?(socket: WebSocketLike): void;
}

/**
 * One socket as graphql-ws's core and the shared path see it (`send`, `close`, `onMessage`, called
 * as methods), with keep-alive and the size and backpressure limits. A class, so that a socket costs
 * a few fields rather than a set of closures (a build with esbuild's keepNames, ours and tsx's, also
 * gives every closure assigned to a name a property store of its own).
 */
export class Connection {
  #onMessage: ((data: string) => Promise<void>) | undefined;
  #heardSincePing = true;
  #done = false;
  #timer: ReturnType<typeof setInterval> | undefined;
  #initTimer: ReturnType<typeof setTimeout> | undefined;
  /** graphql-ws's context for this socket, from connection_init on. */
  ctx: object | undefined;
  #closed: ((code?: number, reason?: string) => Promise<void>) | undefined;
  readonly #socket: WebSocketLike;
  readonly #limits: ConnectionLimits;
  readonly #resolve: () => void;
  readonly protocol: string;

  constructor(socket: WebSocketLike, protocol: string, limits: ConnectionLimits, resolve: () => void) {
    this.#socket = socket;
    this.protocol = protocol;
    this.#limits = limits;
    this.#resolve = resolve;
  }

  /** After the core took the socket: `closed` completes its operations. */
  start(closed: (code?: number, reason?: string) => Promise<void>): void {
    this.#closed = closed;
    const { keepAlive, connectionInitWaitTimeout: initWait } = this.#limits;
    // Shared functions with the connection as argument: no closure per socket. The core's own
    // init-wait timer is off (the adapter passes 0), because it stays reachable for the socket's
    // whole life; this one is released at connection_init.
    if (initWait > 0 && Number.isFinite(initWait)) this.#initTimer = setTimeout(closeUninitialised, initWait, this);
    if (keepAlive > 0 && Number.isFinite(keepAlive)) this.#timer = setInterval(ping, keepAlive, this);
  }

  /** connection_init arrived (the core calls onConnect next). */
  initialised(ctx: object): void {
    this.ctx = ctx;
    if (this.#initTimer) clearTimeout(this.#initTimer);
    this.#initTimer = undefined;
  }

  ping(): void {
    if (!this.#heardSincePing) {
      this.close(1001, 'Keep-alive timeout');
      return;
    }
    this.#heardSincePing = false;
    this.send('{"type":"ping"}');
  }

  send(data: string): void {
    const socket = this.#socket;
    if (socket.readyState !== OPEN) return;
    if ((socket.bufferedAmount ?? 0) > this.#limits.maxBufferedBytes) {
      closeSocket(socket, 1013, 'Client is not reading');
      // Its closing handshake waits behind the unread bytes: release its subscriptions now, so
      // shared executions stop visiting it and nothing more is queued for it.
      this.finish(1013, 'Client is not reading');
      return;
    }
    try {
      socket.send(data);
    } catch {
      /* closed between the check and the send: the close event cleans up */
    }
  }

  close(code: number, reason: string): void {
    closeSocket(this.#socket, code, reason);
  }

  onMessage(cb: (data: string) => Promise<void>): void {
    this.#onMessage = cb;
  }

  /** A received message as protocol text, or undefined when it closed the socket instead. */
  accept(data: unknown): string | undefined {
    this.#heardSincePing = true;
    if (typeof data !== 'string') return void this.close(CloseCode.BadRequest, 'Invalid message received');
    if (data.length > this.#limits.maxMessageSize) return void this.close(1009, 'Message too big');
    return data;
  }

  /** Hands a message to the core. */
  deliver(data: string): void {
    this.#onMessage?.(data).catch((error: unknown) => {
      console.error('graphql-ws: an operation failed outside GraphQL execution:', error);
      this.close(CloseCode.InternalServerError, 'Internal server error');
    });
  }

  /** The socket's close event. */
  closed(code: number | undefined, reason: string | undefined): void {
    // workerd (before its auto-reply compatibility flag) waits for our half of the closing
    // handshake, and otherwise reports the request as hung; elsewhere this is a no-op.
    if (!this.#done && this.#socket.readyState !== CLOSED) closeSocket(this.#socket, echoableCode(code), '');
    this.finish(code, reason);
  }

  finish(code: number | undefined, reason: string | undefined): void {
    if (this.#done) return;
    this.#done = true;
    if (this.#timer) clearInterval(this.#timer);
    if (this.#initTimer) clearTimeout(this.#initTimer);
    // closed() completes every subscription (graphql-js calls return() on their sources).
    (this.#closed?.(code, reason) ?? Promise.resolve())
      .catch((error: unknown) => console.error('graphql-ws: cleanup after close failed:', error))
      .finally(() => {
        this.#limits.released?.(this.#socket);
        this.#resolve();
      });
  }
}

function ping(connection: Connection): void {
  connection.ping();
}

function closeUninitialised(connection: Connection): void {
  if (connection.ctx === undefined) connection.close(CloseCode.ConnectionInitialisationTimeout, 'Connection initialisation timeout');
}

/** A close code we may send back: the peer's own if sendable, else 1000. */
function echoableCode(code: number | undefined): number {
  if (code === undefined) return 1000;
  return code === 1000 || (code >= 1001 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999) ? code : 1000;
}
