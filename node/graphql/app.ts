// The Node dev server: the runtime-agnostic fetch handler behind Hono on @hono/node-server.
import type { AddressInfo } from 'node:net';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Hono } from 'hono';
import { getRequestListener } from '@hono/node-server';
import type { GraphQLFetchHandler } from '../../src/handler/options.ts';
import { createGraphiQL, type GraphiQLOptions } from './graphiql.ts';
import { attachGraphQLWebSocket, type NodeGraphQLWebSocketOptions } from './websocket.ts';
import type { GraphQLWebSocketServer } from '../../src/subscriptions/graphql-ws-adapter.ts';
import type { RequestLog } from './logging.ts';
import { sendStreamDirectly } from './stream-responses.ts';
import { readingSmallBodies, smallBody } from './small-bodies.ts';
import type { ServerMetrics } from './metrics.ts';

/** A GraphQL handler, or any fetch-style function (tests serve their own). */
export type AppHandler = ((request: Request) => Response | Promise<Response>) &
  Partial<Pick<GraphQLFetchHandler, 'fetch' | 'closeStreams' | 'httpSubscriptions' | 'subscriptionStats'>>;

/** What @hono/node-server passes as a request's env. */
interface NodeEnv {
  incoming?: IncomingMessage;
  outgoing?: ServerResponse;
}

// The socket address of each request being served, for per-client limits (see `peerAddress`).
const peers = new WeakMap<Request, string>();

/**
 * The address of the client that sent `request` to this server, or null: the `clientKey` for the
 * handler's per-client stream cap when clients reach the server directly, not through a proxy.
 */
export function peerAddress(request: Request): string | null {
  return peers.get(request) ?? null;
}

export interface AppOptions {
  /** GraphiQL on `GET /graphql` with `Accept: text/html`, assets under `/graphiql/`. Default off. */
  graphiql?: boolean | GraphiQLOptions;
  /** Request log (see logging.ts); none by default. */
  log?: RequestLog | null;
  /** Prometheus metrics (see metrics.ts), served on their path; none by default. */
  metrics?: ServerMetrics | null;
  /** Remember each request's socket address for `peerAddress`. Default off (it costs a map entry per request). */
  peerAddresses?: boolean;
}

/** A Hono app handing every request to the GraphQL handler, which owns paths, methods and errors. */
export function createApp(handler: AppHandler, options: AppOptions = {}): Hono {
  const app = new Hono();
  const { metrics } = options;
  // The synchronous form lets @hono/node-server write a ready answer without awaiting it; a body the
  // server read ahead (small-bodies.ts) goes along, so a POST needs no waiting either.
  const fetch: (request: Request, body?: string) => Response | Promise<Response> = handler.fetch ?? handler;
  let answer = fetch;
  if (options.graphiql) {
    const graphiql = createGraphiQL(options.graphiql === true ? {} : options.graphiql);
    answer = (request, body) => graphiql(request) ?? fetch(request, body);
  }
  if (metrics) {
    answer = metrics.wrap(answer);
    // Scrapes first: neither logged nor counted.
    app.get(metrics.path, () => metrics.scrape());
  }
  if (options.log) app.use('*', options.log.middleware);
  const serveRequest = answer;
  // A handler with subscriptions over HTTP: their streams are written straight to the socket.
  const streams = handler.httpSubscriptions === true;
  const sendStreams = (response: Response, env: NodeEnv | undefined) => sendStreamDirectly(response, env?.outgoing);
  if (options.peerAddresses || streams) {
    app.all('*', (c): Response | Promise<Response> => {
      const request = c.req.raw;
      const env = c.env as NodeEnv | undefined;
      if (options.peerAddresses) {
        const address = env?.incoming?.socket?.remoteAddress;
        if (address !== undefined) peers.set(request, address);
      }
      const response = serveRequest(request, smallBody(env));
      if (!streams) return response;
      return response instanceof Promise ? response.then((settled) => sendStreams(settled, env)) : sendStreams(response, env);
    });
  } else app.all('*', (c) => serveRequest(c.req.raw, smallBody(c.env as NodeEnv | undefined)));
  return app;
}

export interface StartOptions {
  handler: AppHandler;
  /** 0 picks a free port. Default 4000. */
  port?: number;
  /** Interface to listen on. Default: all interfaces. */
  hostname?: string;
  /**
   * Connections the kernel queues before the server accepts them (capped by net.core.somaxconn).
   * Default 4096, not Node's 511: thousands of WebSocket clients reconnecting at once after a
   * restart would otherwise overflow the queue and wait out seconds of SYN retransmissions.
   */
  backlog?: number;
  /** Path printed in `url`. Default `/graphql`. */
  path?: string;
  /** GraphiQL (true: on `path`). Default off. */
  graphiql?: boolean | GraphiQLOptions;
  /** Request log; none by default, so tests stay quiet. */
  log?: RequestLog | null;
  /** Prometheus metrics on their path; the caller gives `metrics.onResponse` to the handler. Default none. */
  metrics?: ServerMetrics | null;
  /** GraphQL over WebSocket (graphql-transport-ws) on `path`, e.g. `{ schema }`. Default off. */
  subscriptions?: Omit<NodeGraphQLWebSocketOptions, 'path'>;
  /** Remember socket addresses for `peerAddress` (a handler's per-client stream cap). Default off. */
  peerAddresses?: boolean;
}

export interface RunningServer {
  /** Where the endpoint answers, e.g. http://localhost:4000/graphql. */
  url: string;
  port: number;
  /** Stops accepting connections, drops idle keep-alive ones, resolves once the server is closed. */
  close(): Promise<void>;
  /**
   * Graceful stop: refuses new connections, closes WebSockets (1001, so clients reconnect elsewhere),
   * lets requests in flight finish and closes each connection once it is idle. Past `timeoutMs` the
   * remaining connections are cut. Resolves true when everything finished in time.
   */
  shutdown(timeoutMs: number): Promise<boolean>;
  /** The GraphQL over WebSocket server, when `subscriptions` were given. */
  webSocketServer?: GraphQLWebSocketServer;
}

export function startServer(options: StartOptions): Promise<RunningServer> {
  // GraphiQL subscribes over the WebSocket when this server has one, else over server-sent events.
  const subscriptions = options.subscriptions ? ('websocket' as const) : ('sse' as const);
  const graphiql =
    options.graphiql === true ? { endpoint: options.path ?? '/graphql', subscriptions } : options.graphiql && { subscriptions, ...options.graphiql };
  const app = createApp(options.handler, { graphiql, log: options.log, metrics: options.metrics, peerAddresses: options.peerAddresses });
  return new Promise((resolve, reject) => {
    const server = createServer(readingSmallBodies(getRequestListener(app.fetch, { hostname: options.hostname })));
    server.once('error', reject);
    server.listen({ port: options.port ?? 4000, host: options.hostname, backlog: options.backlog ?? 4096 });
    server.once('listening', () => {
      server.off('error', reject);
      const { port } = server.address() as AddressInfo;
      const ws = options.subscriptions ? attachGraphQLWebSocket(server, { ...options.subscriptions, path: options.path ?? '/graphql' }) : undefined;
      if (ws) options.metrics?.observeSubscriptions(ws.server);
      // Subscriptions over SSE and multipart are counted as well (the handler's own stats).
      if (options.handler.httpSubscriptions && options.handler.subscriptionStats)
        options.metrics?.observeSubscriptions(options.handler as Pick<GraphQLWebSocketServer, 'subscriptionStats'>);
      const host = !options.hostname || options.hostname === '0.0.0.0' || options.hostname === '::' ? 'localhost' : options.hostname;
      let closing: Promise<void> | undefined;
      const close = () =>
        (closing ??= (async () => {
          const closed = new Promise<void>((done, fail) => server.close((error) => (error ? fail(error) : done())));
          // close() drops the connections idle now; a keep-alive one whose request is still in flight
          // goes idle later, and is dropped by a later sweep (no per-request cost while serving).
          server.closeIdleConnections();
          // Subscription streams end too (without completing, so their clients reconnect elsewhere).
          options.handler.closeStreams?.();
          const sweep = setInterval(() => server.closeIdleConnections(), 50);
          try {
            await ws?.close();
            await closed;
          } finally {
            clearInterval(sweep);
          }
        })());
      resolve({
        url: `http://${host.includes(':') ? `[${host}]` : host}:${port}${options.path ?? '/graphql'}`,
        port,
        close,
        webSocketServer: ws?.server,
        shutdown: async (timeoutMs) => {
          let timer: NodeJS.Timeout | undefined;
          const timedOut = new Promise<boolean>((done) => {
            timer = setTimeout(() => done(false), timeoutMs);
          });
          const finished = await Promise.race([close().then(() => true), timedOut]);
          clearTimeout(timer);
          if (!finished) {
            server.closeAllConnections();
            ws?.terminate();
            await close().catch(() => undefined);
          }
          return finished;
        },
      });
    });
  });
}
