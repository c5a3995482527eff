// Bun: GraphQL subscriptions through `server.upgrade` and Bun.serve's `websocket` handlers, in front of
// any fetch handler (HTTP requests pass through untouched). Bun hands socket events to one set of
// handlers per server rather than to the socket, so each socket gets a small event target that the
// runtime-agnostic adapter listens on.
import { createGraphQLWebSocketServer, isWebSocketUpgrade, type GraphQLWebSocketServer, type WebSocketLike } from '../src/subscriptions/graphql-ws-adapter.ts';
import type { FetchHandler, FetchWebSocketOptions } from '../src/subscriptions/fetch-upgrade.ts';

// The Bun APIs used here, declared so tsc (with Node's types) checks this file too.
export interface BunServerWebSocket<Data> {
  readonly data: Data;
  readonly readyState: number;
  send(data: string): number;
  close(code?: number, reason?: string): void;
  getBufferedAmount(): number;
}
export interface BunServer {
  upgrade(request: Request, options?: { headers?: HeadersInit; data?: unknown }): boolean;
}

/** What each upgraded socket carries from `fetch` to the websocket handlers. */
interface SocketData {
  request: Request;
  protocol: string;
  socket?: BunSocket;
}

type SocketEvent = { data: unknown; code?: number; reason?: string };
type Listener = (event: SocketEvent) => void;

/** The adapter's view of one Bun socket: Bun's handlers dispatch into it. */
class BunSocket implements WebSocketLike {
  readonly #ws: BunServerWebSocket<SocketData>;
  readonly #listeners = new Map<string, Listener[]>();
  constructor(ws: BunServerWebSocket<SocketData>) {
    this.#ws = ws;
  }
  get protocol(): string {
    return this.#ws.data.protocol;
  }
  get readyState(): number {
    return this.#ws.readyState;
  }
  get bufferedAmount(): number {
    return this.#ws.getBufferedAmount();
  }
  send(data: string): void {
    this.#ws.send(data);
  }
  close(code?: number, reason?: string): void {
    this.#ws.close(code, reason);
  }
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  addEventListener(type: 'open' | 'close', listener: (event: { code?: number; reason?: string }) => void): void;
  addEventListener(type: string, listener: Listener): void {
    const list = this.#listeners.get(type);
    if (list) list.push(listener);
    else this.#listeners.set(type, [listener]);
  }
  dispatch(type: string, event: Partial<SocketEvent>): void {
    const full: SocketEvent = { data: undefined, ...event };
    for (const listener of this.#listeners.get(type) ?? []) listener(full);
  }
}

export interface BunGraphQLServe {
  /** Bun.serve's `fetch`: upgrades on `path`, everything else to the handler. */
  fetch(request: Request, server: BunServer): Response | Promise<Response> | undefined;
  /** Bun.serve's `websocket` handlers. */
  websocket: {
    open(ws: BunServerWebSocket<SocketData>): void;
    message(ws: BunServerWebSocket<SocketData>, message: string | Uint8Array): void;
    close(ws: BunServerWebSocket<SocketData>, code: number, reason: string): void;
  };
  readonly webSocketServer: GraphQLWebSocketServer;
}

/** `{ fetch, websocket }` for Bun.serve (or a default export): GraphQL over WebSocket on `path`, the rest to `handler`. */
export function withGraphQLWebSocket(handler: FetchHandler, options: FetchWebSocketOptions): BunGraphQLServe {
  const { path = '/graphql', ...adapterOptions } = options;
  const server = createGraphQLWebSocketServer(adapterOptions);
  return {
    fetch(request, bun) {
      if (!isWebSocketUpgrade(request) || (path !== null && new URL(request.url).pathname !== path)) return handler(request);
      if (request.method !== 'GET') return new Response('WebSocket upgrades must use GET', { status: 405, headers: { allow: 'GET' } });
      const protocol = server.selectProtocol(request.headers.get('sec-websocket-protocol'));
      const data: SocketData = { request, protocol: protocol ?? '' };
      const upgraded = bun.upgrade(request, { data, headers: protocol ? { 'sec-websocket-protocol': protocol } : undefined });
      // Bun answers a successful upgrade itself; fetch then returns nothing.
      return upgraded ? undefined : new Response('Bad WebSocket upgrade', { status: 400 });
    },
    websocket: {
      open(ws) {
        const socket = new BunSocket(ws);
        ws.data.socket = socket;
        void server.serve(socket, { request: ws.data.request, protocol: ws.data.protocol });
      },
      message(ws, message) {
        // Binary frames reach the adapter as such, and it refuses them as the protocol says.
        ws.data.socket?.dispatch('message', { data: message });
      },
      close(ws, code, reason) {
        ws.data.socket?.dispatch('close', { code, reason });
      },
    },
    webSocketServer: server,
  };
}
