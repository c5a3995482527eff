// The part of serving GraphQL over WebSocket from a fetch handler that every runtime shares: which
// requests are upgrades for us, the GET-only rule and subprotocol choice. Only the upgrade itself
// (Deno.upgradeWebSocket, workerd's WebSocketPair, ...) differs, and the runtime adapter passes it in.
import { createGraphQLWebSocketServer, isWebSocketUpgrade, type GraphQLWebSocketOptions, type GraphQLWebSocketServer } from './graphql-ws-adapter.ts';

export type FetchHandler = (request: Request) => Response | Promise<Response>;

export interface FetchWebSocketOptions extends GraphQLWebSocketOptions {
  /** URL path that accepts upgrades. Default "/graphql"; null for every path. */
  path?: string | null;
}

/**
 * Accepts the upgrade for the chosen subprotocol (`undefined` when the client offered none we
 * speak), hands the socket to `server.serve`, and returns the runtime's 101 response.
 */
export type UpgradeWebSocket = (request: Request, protocol: string | undefined, server: GraphQLWebSocketServer) => Response;

/** `fetch` answering WebSocket upgrades on `path` with GraphQL over WebSocket, and the rest with `handler`. */
export function withFetchWebSocket(
  handler: FetchHandler,
  options: FetchWebSocketOptions,
  upgrade: UpgradeWebSocket,
): FetchHandler & { readonly webSocketServer: GraphQLWebSocketServer } {
  const { path = '/graphql', ...adapterOptions } = options;
  const server = createGraphQLWebSocketServer(adapterOptions);
  const fetch = (request: Request): Response | Promise<Response> => {
    if (!isWebSocketUpgrade(request) || (path !== null && new URL(request.url).pathname !== path)) {
      return handler(request);
    }
    if (request.method !== 'GET') return new Response('WebSocket upgrades must use GET', { status: 405, headers: { allow: 'GET' } });
    return upgrade(request, server.selectProtocol(request.headers.get('sec-websocket-protocol')), server);
  };
  return Object.assign(fetch, { webSocketServer: server });
}
