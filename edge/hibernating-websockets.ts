// GraphQL over WebSocket in a Durable Object that can hibernate: sockets accepted with
// `state.acceptWebSocket`, so Cloudflare keeps them open while the object leaves memory, and their
// events arrive through the object's webSocketMessage/webSocketClose/webSocketError methods. What a
// woken instance needs to carry on is kept with each socket (hibernation-attachment.ts); the new
// instance replays it into the protocol server before it handles any event: connection_init (its
// acknowledgement is not sent again) and then each subscription, and waits until every one listens.
//
// Nothing here may keep a timer running while sockets are idle, or the object never hibernates: the
// server sends no keep-alive pings (clients ping, and Cloudflare answers `{"type":"ping"}` with
// `{"type":"pong"}` without waking the object).
import { subscribe as graphqlSubscribe, type ExecutionArgs } from 'graphql';
import type { GraphQLWebSocketExtra, GraphQLWebSocketOptions, GraphQLWebSocketServer, WebSocketLike } from '../src/subscriptions/graphql-ws-adapter.ts';
import type { UpgradeWebSocket } from '../src/subscriptions/fetch-upgrade.ts';
import { SocketAttachment, subscriptionOf } from './hibernation-attachment.ts';

/** workerd's server-side WebSocket as the Hibernation API gives it. */
export interface HibernatableWebSocket {
  readonly readyState: number;
  /** The standard API, for a socket closed at once. */
  accept(): void;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  serializeAttachment(value: unknown): void;
  deserializeAttachment(): unknown;
}

/** The parts of a Durable Object's `state` (ctx) used here. */
export interface HibernationState {
  acceptWebSocket(ws: HibernatableWebSocket, tags?: string[]): void;
  getWebSockets(tag?: string): HibernatableWebSocket[];
  setWebSocketAutoResponse(pair?: unknown): void;
  blockConcurrencyWhile<T>(callback: () => Promise<T>): Promise<T>;
}

// workerd's globals, declared so tsc (with Node's types) checks this file too.
declare const WebSocketPair: new () => { 0: HibernatableWebSocket; 1: HibernatableWebSocket };
declare const WebSocketRequestResponsePair: new (request: string, response: string) => unknown;

/** graphql-ws clients send exactly this as their keep-alive ping (JSON.stringify of the message). */
export const PING_FRAME = '{"type":"ping"}';
export const PONG_FRAME = '{"type":"pong"}';

/** How long a woken instance waits for its sockets' subscriptions to listen again. */
const RESTORE_BOUND_MS = 10_000;

const CLOSED = 3;

/** One socket as the protocol server sees it; events come from the object's handler methods. */
class HibernatingSocket implements WebSocketLike {
  readonly #ws: HibernatableWebSocket;
  readonly attachment: SocketAttachment;
  #onMessage: ((event: { data: unknown }) => void)[] = [];
  #onClose: ((event: { code?: number; reason?: string }) => void)[] = [];
  /** connectionParams of the connection_init in flight, kept once it is acknowledged. */
  #pendingParams: Record<string, unknown> | undefined;
  /** Set while a woken instance replays connection_init: its acknowledgement is not sent again. */
  #replaying: (() => void) | undefined;
  #listening: (() => void) | undefined;
  /** Resolves once the protocol server listens to this socket. */
  readonly listening: Promise<void>;

  constructor(ws: HibernatableWebSocket, attachment: SocketAttachment) {
    this.#ws = ws;
    this.attachment = attachment;
    this.listening = new Promise((resolve) => {
      this.#listening = resolve;
    });
  }

  get protocol(): string {
    return this.attachment.protocol;
  }

  get readyState(): number {
    return this.#ws.readyState;
  }

  send(data: string): void {
    if (data.startsWith('{"type":"connection_ack"')) {
      if (this.#replaying) {
        this.#replaying();
        return;
      }
      this.attachment.acknowledged = true;
      this.attachment.connectionParams = this.#pendingParams;
      if (!this.#save()) {
        this.close(1009, 'connectionParams too large to keep across hibernation');
        return;
      }
    }
    this.#ws.send(data);
  }

  close(code?: number, reason?: string): void {
    this.#ws.close(code, reason);
  }

  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  addEventListener(type: 'open' | 'close', listener: (event: { code?: number; reason?: string }) => void): void;
  addEventListener(type: string, listener: (event: never) => void): void {
    if (type === 'message') {
      this.#onMessage.push(listener as (event: { data: unknown }) => void);
      this.#listening?.();
    } else if (type === 'close') this.#onClose.push(listener as (event: { code?: number; reason?: string }) => void);
  }

  /** A message from the client (webSocketMessage). */
  received(data: unknown): void {
    if (typeof data === 'string') {
      if (data.includes('"connection_init"')) this.#notePendingParams(data);
      else if (this.attachment.acknowledged) {
        const started = subscriptionOf(data);
        if (started && !this.attachment.subscriptions.has(started.id)) {
          this.attachment.subscriptions.set(started.id, started.payload);
          if (!this.#save()) {
            this.attachment.subscriptions.delete(started.id);
            this.#ws.send(
              JSON.stringify({
                id: started.id,
                type: 'error',
                payload: [{ message: 'This connection holds too many or too large subscriptions to keep across hibernation' }],
              }),
            );
            return;
          }
        }
      }
    }
    for (const listener of this.#onMessage) listener({ data });
  }

  /** The socket closed (webSocketClose, or webSocketError). */
  closed(code: number | undefined, reason: string | undefined): void {
    for (const listener of this.#onClose) listener({ code, reason });
  }

  /** The operation `id` ended (completed by either side, failed, or its socket closed). */
  ended(id: string): void {
    if (this.attachment.subscriptions.delete(id) && this.#ws.readyState !== CLOSED) this.#save();
  }

  /** Replays connection_init into the protocol server; resolves once it acknowledged (or the socket closed). */
  async replayInit(): Promise<void> {
    const acknowledged = new Promise<void>((resolve) => {
      this.#replaying = resolve;
      this.#onClose.push(() => resolve());
    });
    const params = this.attachment.connectionParams;
    this.received(JSON.stringify(params === undefined ? { type: 'connection_init' } : { type: 'connection_init', payload: params }));
    await acknowledged;
    this.#replaying = undefined;
  }

  /** Replays the kept subscriptions, as the client sent them. */
  replaySubscriptions(): void {
    for (const [id, payload] of this.attachment.subscriptions) {
      const frame = JSON.stringify({ id, type: 'subscribe', payload });
      for (const listener of this.#onMessage) listener({ data: frame });
    }
  }

  #notePendingParams(data: string): void {
    try {
      const message = JSON.parse(data) as { type?: unknown; payload?: unknown };
      if (message?.type !== 'connection_init') return;
      const payload = message.payload;
      this.#pendingParams = payload !== null && typeof payload === 'object' && !Array.isArray(payload) ? (payload as Record<string, unknown>) : undefined;
    } catch {
      /* the protocol server answers it */
    }
  }

  #save(): boolean {
    const encoded = this.attachment.encode();
    if (encoded === undefined) return false;
    try {
      this.#ws.serializeAttachment(encoded);
    } catch {
      /* closed meanwhile */
    }
    return true;
  }
}

/**
 * The options the protocol server runs with in a hibernating object: no keep-alive timer, and the
 * hooks that keep each socket's attachment current and tell when replayed subscriptions listen.
 */
class RestoreTracker {
  /** graphql subscribe() calls not settled yet. */
  pending = 0;

  options(options: Omit<GraphQLWebSocketOptions, 'schema'>): Omit<GraphQLWebSocketOptions, 'schema'> {
    const { onError, onComplete } = options;
    const run = options.subscribe ?? graphqlSubscribe;
    const ended = (ctx: { extra: GraphQLWebSocketExtra }, id: string) => {
      const socket = ctx.extra.socket;
      if (socket instanceof HibernatingSocket) socket.ended(id);
    };
    return {
      ...options,
      keepAlive: 0,
      subscribe: (args: ExecutionArgs) => {
        this.pending++;
        const settled = Promise.resolve(run(args)).finally(() => {
          this.pending--;
        });
        return settled;
      },
      onError: (ctx, id, payload, errors) => {
        ended(ctx, id);
        return onError?.(ctx, id, payload, errors);
      },
      onComplete: (ctx, id, payload) => {
        ended(ctx, id);
        return onComplete?.(ctx, id, payload);
      },
    };
  }
}

export interface HibernatingWebSocketsOptions {
  /** A keep-alive timer would hold the object in memory: clients ping, Cloudflare answers. */
  keepAlive?: 0;
}

/**
 * The hibernating side of a Durable Object's graphql-ws server. `adapt` wraps the protocol options,
 * `upgrade` accepts new sockets, the handler methods deliver events, `restore` runs when a new
 * instance starts.
 */
export class HibernatingWebSockets {
  readonly #state: HibernationState;
  readonly #sockets = new Map<HibernatableWebSocket, HibernatingSocket>();
  readonly #tracker = new RestoreTracker();

  constructor(state: HibernationState) {
    this.#state = state;
    // Answered by Cloudflare itself, with the object left asleep.
    state.setWebSocketAutoResponse(new WebSocketRequestResponsePair(PING_FRAME, PONG_FRAME));
  }

  /** The protocol options for a hibernating object; refuses a server keep-alive (it would keep the object awake). */
  adapt(options: Omit<GraphQLWebSocketOptions, 'schema'>): Omit<GraphQLWebSocketOptions, 'schema'> {
    if (options.keepAlive !== undefined && options.keepAlive !== 0) {
      throw new TypeError(
        'A hibernating Durable Object sends no keep-alive pings (a timer keeps it in memory): leave `keepAlive` unset, and let clients ping (graphql-ws `keepAlive`)',
      );
    }
    return this.#tracker.options(options);
  }

  /** Accepts an upgrade with the Hibernation API. */
  readonly upgrade: UpgradeWebSocket = (request, protocol, server) => {
    const pair = new WebSocketPair();
    const [client, ws] = [pair[0], pair[1]];
    if (protocol === undefined) {
      // Closed at once (4406). workerd completes the closing handshake of a hibernatable socket only
      // once its client has sent something, so this one is held the standard way.
      ws.accept();
      void server.serve(ws as unknown as WebSocketLike, { request, protocol: '' });
      return new Response(null, { status: 101, webSocket: client } as ResponseInit);
    }
    this.#state.acceptWebSocket(ws);
    const socket = this.#track(ws, SocketAttachment.fresh(protocol));
    ws.serializeAttachment(socket.attachment.encode());
    void server.serve(socket, { request, protocol }).then(() => this.#sockets.delete(ws));
    return new Response(null, { status: 101, headers: { 'sec-websocket-protocol': protocol }, webSocket: client } as ResponseInit);
  };

  message(ws: HibernatableWebSocket, data: unknown): void {
    const socket = this.#sockets.get(ws);
    if (socket) socket.received(data);
    else ws.close(1011, 'Unknown connection');
  }

  close(ws: HibernatableWebSocket, code: number | undefined, reason: string | undefined): void {
    const socket = this.#sockets.get(ws);
    if (socket) socket.closed(code, reason);
    else if (ws.readyState !== CLOSED) ws.close(1000);
  }

  /**
   * Serves the sockets a previous instance held, before this one handles any event. Each is replayed
   * into `server`; resolves once every replayed subscription listens again (or ended), within a bound.
   */
  async restore(server: GraphQLWebSocketServer): Promise<void> {
    const sockets: HibernatingSocket[] = [];
    for (const ws of this.#state.getWebSockets()) {
      if (this.#sockets.has(ws)) continue;
      const attachment = SocketAttachment.read(ws.deserializeAttachment());
      if (attachment === undefined) {
        ws.close(1011, 'Connection state lost');
        continue;
      }
      if (!attachment.acknowledged) {
        // Its connection_init wait would have kept the object awake: this socket outlived a restart.
        ws.close(4408, 'Connection initialisation timeout');
        continue;
      }
      const socket = this.#track(ws, attachment);
      void server.serve(socket, { protocol: attachment.protocol }).then(() => this.#sockets.delete(ws));
      sockets.push(socket);
    }
    if (sockets.length === 0) return;
    const deadline = Date.now() + RESTORE_BOUND_MS;
    await Promise.all(
      sockets.map(async (socket) => {
        await socket.listening;
        await socket.replayInit();
        socket.replaySubscriptions();
      }),
    );
    const expected = () => sockets.reduce((n, socket) => n + (socket.readyState === CLOSED ? 0 : socket.attachment.subscriptions.size), 0);
    while (this.#tracker.pending > 0 || server.subscriptionStats().open < expected()) {
      if (Date.now() > deadline) {
        console.error('graphql-ws: subscriptions restored after hibernation did not all start in time');
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  }

  #track(ws: HibernatableWebSocket, attachment: SocketAttachment): HibernatingSocket {
    const socket = new HibernatingSocket(ws, attachment);
    this.#sockets.set(ws, socket);
    return socket;
  }
}
