// Deno: GraphQL subscriptions over `Deno.upgradeWebSocket` on the GraphQL path, in front of any
// fetch handler (HTTP requests pass through untouched).
import {
  createGraphQLWebSocketServer,
  isWebSocketUpgrade,
  type GraphQLWebSocketOptions,
  type GraphQLWebSocketServer,
} from '../src/subscriptions/graphql-ws-adapter.ts';

// The one Deno API used here, declared so tsc (with Node's types) checks this file too.
declare const Deno: {
  upgradeWebSocket(request: Request, options?: { protocol?: string; idleTimeout?: number }): {
    socket: WebSocket;
    response: Response;
  };
};

export interface DenoGraphQLWebSocketOptions extends GraphQLWebSocketOptions {
  /** URL path that accepts upgrades. Default "/graphql"; null for every path. */
  path?: string | null;
}

export type FetchHandler = (request: Request) => Response | Promise<Response>;

/** `fetch` answering WebSocket upgrades on `path` with GraphQL over WebSocket, and the rest with `handler`. */
export function withGraphQLWebSocket(
  handler: FetchHandler,
  options: DenoGraphQLWebSocketOptions,
): FetchHandler & { readonly webSocketServer: GraphQLWebSocketServer } {
  const { path = '/graphql', ...adapterOptions } = options;
  const server = createGraphQLWebSocketServer(adapterOptions);
  const fetch = (request: Request): Response | Promise<Response> => {
    if (!isWebSocketUpgrade(request) || (path !== null && new URL(request.url).pathname !== path)) {
      return handler(request);
    }
    if (request.method !== 'GET') return new Response('WebSocket upgrades must use GET', { status: 405, headers: { allow: 'GET' } });
    const protocol = server.selectProtocol(request.headers.get('sec-websocket-protocol'));
    let upgraded: { socket: WebSocket; response: Response };
    try {
      upgraded = Deno.upgradeWebSocket(request, protocol ? { protocol } : {});
    } catch (error) {
      // A malformed handshake (missing key, wrong version): tell the client what is wrong.
      return new Response(`Bad WebSocket upgrade: ${(error as Error).message}`, { status: 400 });
    }
    void server.serve(upgraded.socket, { request, protocol: protocol ?? '' });
    return upgraded.response;
  };
  return Object.assign(fetch, { webSocketServer: server });
}
