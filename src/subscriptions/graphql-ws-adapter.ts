// GraphQL over WebSocket (the graphql-transport-ws subprotocol) on any standard WebSocket: the
// protocol itself is graphql-ws's server core (`makeServer`); this file only feeds it a socket
// (Deno's, workerd's, or `ws` on Node) and adds what the core leaves to each transport: keep-alive,
// message size and backpressure limits, syntax errors as `error` messages, and never letting a
// failure escape as a crash.
import { makeServer, type Context, type ServerOptions, type SubscribePayload } from 'graphql-ws';
import {
  GraphQLError,
  NoSchemaIntrospectionCustomRule,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  subscribe,
  type ExecutionArgs,
  type ExecutionResult,
  type GraphQLSchema,
  type ValidationRule,
} from 'graphql';
import { Lru } from '../handler/lru.ts';
import { withoutSuggestionsIn } from '../handler/suggestions.ts';
import { executeWhole } from '../execution/graphql-compat.ts';
import { createSharedSubscribe, type ConnectionParams, type SubscriptionShareKey } from './shared-subscribe.ts';
import type { SharedExecutionStats } from './shared-executions.ts';
import { Connection, type WebSocketLike } from './socket-connection.ts';
import { assertSchemaOption, GRAPHQL_TRANSPORT_WS_PROTOCOL, isWebSocketUpgrade, selectSubprotocol } from './websocket-upgrade.ts';

export type { WebSocketLike };

export { GRAPHQL_TRANSPORT_WS_PROTOCOL, isWebSocketUpgrade };

/** What the adapter needs of a server-side WebSocket; Deno's, workerd's and `ws`'s all fit. */
/** `ctx.extra` in graphql-ws callbacks (onConnect, context, onSubscribe…). */
export interface GraphQLWebSocketExtra {
  socket: WebSocketLike;
  /** The upgrade request (headers, URL), for authentication in onConnect or context. */
  request: Request | undefined;
}

export type { ConnectionParams, SubscriptionShareKey };

export interface GraphQLWebSocketOptions extends Omit<ServerOptions<ConnectionParams, GraphQLWebSocketExtra>, 'schema' | 'onSubscribe'> {
  schema: GraphQLSchema;
  /**
   * Runs before each operation (see graphql-ws `onSubscribe`): its execution arguments or errors are
   * used; when it returns nothing, the adapter's own parse and validation run (with `validationRules`
   * and `introspection`), not graphql-ws's.
   */
  onSubscribe?: ServerOptions<ConnectionParams, GraphQLWebSocketExtra>['onSubscribe'];
  /** Rules run after graphql-js's `specifiedRules` (as on the HTTP handler), e.g. a depth limit. */
  validationRules?: readonly ValidationRule[];
  /**
   * Refuses `__schema` and `__type`, and leaves graphql-js's "Did you mean …?" out of syntax,
   * validation and variable errors, as the HTTP handler does with `introspection: false`. Default true.
   */
  introspection?: boolean;
  /**
   * Interval of protocol `ping` messages, in ms; a socket that sent nothing since the previous ping
   * is closed (1001), so dead peers release their subscriptions. 0 disables. Default 12,000.
   */
  keepAlive?: number;
  /** Largest accepted message, in UTF-16 code units (~bytes for JSON). Default 1 MiB; over it: 1009. */
  maxMessageSize?: number;
  /**
   * Bytes queued unsent to a client that does not read (the socket's `bufferedAmount`), past which it
   * is closed (1013) and sent nothing more. Default 8 MiB.
   */
  maxBufferedBytes?: number;
  /**
   * Which subscribers share one execution of a subscription. Subscribers with the same document,
   * operation name and variables, whose keys from this function are equal, share one execution and
   * one serialized payload per event (run with the context value of the first); `undefined` gives a
   * subscriber its own execution. Return every part of the context the resolvers read (user id,
   * roles…). Default: share when there is no `context` option (resolvers then see nothing per
   * connection), never otherwise. `false` never shares. Sharing is off with a custom `onSubscribe`,
   * `onOperation`, `onNext`, `jsonMessageReplacer` or `jsonMessageReviver`.
   */
  subscriptionShareKey?: SubscriptionShareKey<GraphQLWebSocketExtra> | false;
}

export interface GraphQLWebSocketServer {
  /**
   * Picks the subprotocol to answer with from a `Sec-WebSocket-Protocol` request header; undefined
   * when the client offered none we speak (accept anyway: the server then closes with 4406).
   */
  selectProtocol(header: string | null | undefined): string | undefined;
  /** Serves one socket until it closes; never rejects. */
  serve(socket: WebSocketLike, init?: { request?: Request | (() => Request | undefined); protocol?: string }): Promise<void>;
  /** Sockets being served right now. */
  readonly openSockets: number;
  /** Those sockets (for a transport that must cut them, e.g. a shutdown out of time). */
  sockets(): Iterable<WebSocketLike>;
  /**
   * Subscriptions streaming now (`open`), and of those the executions of the shared path and their
   * members (zero when sharing is off).
   */
  subscriptionStats(): SharedExecutionStats & { open: number };
  /** Closes every socket (1001 by default) and waits for their subscriptions to end. */
  close(code?: number, reason?: string): Promise<void>;
}

const CONNECTING = 0;
const OPEN = 1;

export function createGraphQLWebSocketServer(options: GraphQLWebSocketOptions): GraphQLWebSocketServer {
  const {
    schema,
    keepAlive = 12_000,
    maxMessageSize = 1 << 20,
    maxBufferedBytes = 8 << 20,
    connectionInitWaitTimeout = 3_000,
    validationRules = [],
    introspection = true,
    subscriptionShareKey,
    ...given
  } = options;
  assertSchemaOption(options);
  // Variables are coerced in execute and subscribe, after validation: their errors lose suggestions there.
  const serverOptions = introspection
    ? given
    : { ...given, execute: hidingSuggestions(given.execute ?? executeWhole), subscribe: hidingSuggestions(given.subscribe ?? subscribe) };
  const documents = new DocumentCache(schema, {
    parse: serverOptions.parse,
    validate: serverOptions.validate,
    rules: introspection ? [...specifiedRules, ...validationRules] : [...specifiedRules, NoSchemaIntrospectionCustomRule, ...validationRules],
    hideSuggestions: !introspection,
  });
  const shared = createSharedSubscribe<GraphQLWebSocketExtra>({
    options: serverOptions,
    prepare: (payload) => documents.prepare(payload),
    shareKey: subscriptionShareKey,
  });
  // Connections waiting for connection_init, by their ctx.extra: onConnect is where the core's
  // per-connection context first shows (the shared path needs it), and where the init wait ends.
  const initialising = new WeakMap<GraphQLWebSocketExtra, Connection>();
  const { onConnect, onOperation, onComplete } = serverOptions;
  // Subscriptions streaming through the core (those the shared path does not take), by connection.
  const streaming = new WeakMap<object, Set<string>>();
  let coreStreaming = 0;
  const core = makeServer<ConnectionParams, GraphQLWebSocketExtra>({
    ...serverOptions,
    // graphql-js 17's `execute` refuses a schema that defines @defer or @stream (graphql-compat.ts).
    execute: serverOptions.execute ?? executeWhole,
    // Connection does it (socket-connection.ts).
    connectionInitWaitTimeout: 0,
    onConnect: (ctx) => {
      initialising.get(ctx.extra)?.initialised(ctx);
      initialising.delete(ctx.extra);
      return onConnect?.(ctx);
    },
    onOperation: async (ctx, id, payload, args, result) => {
      const replaced = await onOperation?.(ctx, id, payload, args, result);
      const streams = replaced ?? result;
      if (streams !== null && typeof streams === 'object' && Symbol.asyncIterator in streams) {
        let ids = streaming.get(ctx);
        if (ids === undefined) streaming.set(ctx, (ids = new Set()));
        if (!ids.has(id)) coreStreaming++;
        ids.add(id);
      }
      return replaced;
    },
    // Called however an operation ends: its source ends, the client completes it, the socket closes.
    onComplete: async (ctx, id, payload) => {
      if (streaming.get(ctx)?.delete(id)) coreStreaming--;
      await onComplete?.(ctx, id, payload);
    },
    onSubscribe: serverOptions.onSubscribe
      ? withOwnDefault(serverOptions.onSubscribe, documents, !introspection)
      : (_ctx, _id, payload) => documents.prepare(payload),
    schema,
  });
  const live = new Map<WebSocketLike, Promise<void>>();

  // Shared by every connection; `released` runs once a socket's subscriptions have ended.
  const setup = {
    connectionInitWaitTimeout,
    keepAlive,
    maxMessageSize,
    maxBufferedBytes,
    released: (socket: WebSocketLike) => live.delete(socket),
  };
  /** Serves an open socket; the promise settles (never rejects) once its subscriptions ended. */
  const serveOpen = (socket: WebSocketLike, request: Request | (() => Request | undefined) | undefined, protocol: string): Promise<void> =>
    new Promise<void>((resolve) => {
      try {
        const extra: GraphQLWebSocketExtra = typeof request === 'function' ? lazyExtra(socket, request) : { socket, request };
        const connection = new Connection(socket, protocol, setup, resolve);
        initialising.set(extra, connection);
        connection.start(core.opened(connection, extra));
        socket.addEventListener('message', (event: { data: unknown }) => {
          const data = connection.accept(event.data);
          if (data === undefined) return;
          const ctx = shared && (connection.ctx as Context<ConnectionParams, GraphQLWebSocketExtra> | undefined);
          if (ctx && shared.handle(ctx, connection, data)) return;
          connection.deliver(data);
        });
        socket.addEventListener('close', (event: { code?: number; reason?: string }) => connection.closed(event.code, event.reason));
      } catch (error) {
        console.error('graphql-ws: serving a socket failed:', error);
        live.delete(socket);
        resolve();
      }
    });

  return {
    selectProtocol: selectSubprotocol,
    serve(socket, init = {}) {
      const protocol = init.protocol ?? socket.protocol ?? '';
      // Open already (Node, workerd): served with nothing awaited in between, and tracked by the one
      // promise serveOpen returns, so an idle socket keeps no promise chain.
      if (socket.readyState === OPEN) {
        const served = serveOpen(socket, init.request, protocol);
        live.set(socket, served);
        return served;
      }
      // Deno hands the socket over before the handshake finishes; sending then would throw.
      const served =
        socket.readyState === CONNECTING
          ? new Promise<boolean>((resolve) => {
              socket.addEventListener('open', () => resolve(true));
              socket.addEventListener('close', () => resolve(false));
            }).then((opened) => (opened && socket.readyState === OPEN ? serveOpen(socket, init.request, protocol) : undefined))
          : Promise.resolve();
      const tracked = served.then(
        () => {
          live.delete(socket);
        },
        (error: unknown) => {
          live.delete(socket);
          console.error('graphql-ws: serving a socket failed:', error);
        },
      );
      live.set(socket, tracked);
      return tracked;
    },
    get openSockets() {
      return live.size;
    },
    sockets() {
      return live.keys();
    },
    subscriptionStats() {
      const { executions, members } = shared?.executions.stats() ?? { executions: 0, members: 0 };
      return { executions, members, open: members + coreStreaming };
    },
    async close(code = 1001, reason = 'Server shutting down') {
      for (const socket of live.keys()) {
        try {
          socket.close(code, reason);
        } catch {
          /* already closed */
        }
      }
      await Promise.all(live.values());
    },
  };
}

/**
 * `extra` whose `request` is built on first read: a web Request costs a few KB per socket, and most
 * servers read it only in onConnect, if at all.
 */
function lazyExtra(socket: WebSocketLike, build: () => Request | undefined): GraphQLWebSocketExtra {
  let make: (() => Request | undefined) | undefined = build;
  let request: Request | undefined;
  return {
    socket,
    get request() {
      if (make) {
        request = make();
        make = undefined;
      }
      return request;
    },
    set request(value) {
      make = undefined;
      request = value;
    },
  };
}

/**
 * Parse+validate once per distinct document. Syntax and validation errors become the protocol's
 * `error` message for that operation instead of closing the whole socket (graphql-ws's default
 * closes the socket when parsing throws).
 */
class DocumentCache {
  static readonly MAX = 500;
  readonly #schema: GraphQLSchema;
  readonly #parse: typeof parse;
  readonly #validate: typeof validate;
  readonly #rules: readonly ValidationRule[];
  readonly #hideSuggestions: boolean;
  /** Custom parse/validate functions may depend on more than the text: then nothing is cached. */
  readonly #cacheable: boolean;
  readonly #valid = new Lru<string, DocumentNode>(DocumentCache.MAX);

  constructor(
    schema: GraphQLSchema,
    options: { parse?: typeof parse; validate?: typeof validate; rules: readonly ValidationRule[]; hideSuggestions: boolean },
  ) {
    this.#schema = schema;
    this.#hideSuggestions = options.hideSuggestions;
    this.#parse = options.parse ?? parse;
    this.#validate = options.validate ?? validate;
    this.#rules = options.rules;
    this.#cacheable = !options.parse && !options.validate;
  }

  prepare(payload: SubscribePayload): ExecutionArgs | readonly GraphQLError[] {
    if (typeof payload.query !== 'string' || payload.query === '') {
      return [new GraphQLError('The subscribe payload must have a non-empty `query` string')];
    }
    const args = {
      schema: this.#schema,
      operationName: payload.operationName ?? undefined,
      variableValues: payload.variables ?? undefined,
    };
    const cached = this.#valid.get(payload.query);
    if (cached) return { ...args, document: cached };
    let document: DocumentNode;
    try {
      document = this.#parse(payload.query);
    } catch (error) {
      if (error instanceof GraphQLError) return [error];
      throw error;
    }
    const errors = this.#validate(this.#schema, document, this.#rules);
    if (errors.length > 0) return this.#hideSuggestions ? errors.map((error) => withoutSuggestionsIn(error)) : errors;
    if (this.#cacheable) {
      this.#valid.set(payload.query, document);
    }
    return { ...args, document };
  }
}

type Run = NonNullable<ServerOptions['execute']>;

/** `run` with suggestions taken out of the errors of a result that ends the operation at once. */
function hidingSuggestions(run: Run): Run {
  const strip = (result: Awaited<ReturnType<Run>>) =>
    Symbol.asyncIterator in result || result.errors === undefined
      ? result
      : ({ ...result, errors: result.errors.map((error) => withoutSuggestionsIn(error)) } as ExecutionResult);
  return (args) => {
    const result = run(args);
    return isThenable(result) ? Promise.resolve(result).then(strip) : strip(result as Awaited<ReturnType<Run>>);
  };
}

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  value !== null && typeof value === 'object' && typeof (value as { then?: unknown }).then === 'function';

type OnSubscribe = NonNullable<ServerOptions<ConnectionParams, GraphQLWebSocketExtra>['onSubscribe']>;

/** A custom onSubscribe that returns nothing gets the adapter's parse and validation; its errors lose suggestions when asked. */
function withOwnDefault(custom: OnSubscribe, documents: DocumentCache, hideSuggestions: boolean): OnSubscribe {
  return async (ctx, id, payload) => {
    const given = await custom(ctx, id, payload);
    if (given === undefined || given === null) return documents.prepare(payload);
    if (hideSuggestions && Array.isArray(given)) return (given as readonly GraphQLError[]).map((error) => withoutSuggestionsIn(error));
    return given;
  };
}
