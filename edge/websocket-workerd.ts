// Cloudflare Workers (workerd): GraphQL subscriptions over a `WebSocketPair` on the GraphQL path, in
// front of any fetch handler. The pub/sub a Worker's subscriptions see is per isolate: to reach
// subscribers on every isolate, terminate the sockets in a Durable Object (see the README).
import {
  createGraphQLWebSocketServer,
  isWebSocketUpgrade,
  type GraphQLWebSocketOptions,
  type GraphQLWebSocketServer,
  type WebSocketLike,
} from '../src/subscriptions/graphql-ws-adapter.ts';

// The workerd APIs used here, declared so tsc (with Node's types) checks this file too.
interface WorkerWebSocket extends WebSocketLike {
  accept(): void;
}
declare const WebSocketPair: new () => { 0: WorkerWebSocket; 1: WorkerWebSocket };

export interface WorkerdGraphQLWebSocketOptions extends GraphQLWebSocketOptions {
  /** URL path that accepts upgrades. Default "/graphql"; null for every path. */
  path?: string | null;
}

export type FetchHandler = (request: Request) => Response | Promise<Response>;

/** `fetch` answering WebSocket upgrades on `path` with GraphQL over WebSocket, and the rest with `handler`. */
export function withGraphQLWebSocket(
  handler: FetchHandler,
  options: WorkerdGraphQLWebSocketOptions,
): FetchHandler & { readonly webSocketServer: GraphQLWebSocketServer } {
  const { path = '/graphql', ...adapterOptions } = options;
  const server = createGraphQLWebSocketServer(adapterOptions);
  const fetch = (request: Request): Response | Promise<Response> => {
    if (!isWebSocketUpgrade(request) || (path !== null && new URL(request.url).pathname !== path)) {
      return handler(request);
    }
    if (request.method !== 'GET') return new Response('WebSocket upgrades must use GET', { status: 405, headers: { allow: 'GET' } });
    const protocol = server.selectProtocol(request.headers.get('sec-websocket-protocol'));
    const pair = new WebSocketPair();
    const [client, socket] = [pair[0], pair[1]];
    socket.accept();
    void server.serve(socket, { request, protocol: protocol ?? '' });
    const headers = protocol ? { 'sec-websocket-protocol': protocol } : undefined;
    // `webSocket` is workerd's extension to ResponseInit.
    return new Response(null, { status: 101, headers, webSocket: client } as ResponseInit);
  };
  return Object.assign(fetch, { webSocketServer: server });
}
