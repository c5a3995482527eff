// The part of serving GraphQL over WebSocket from a fetch handler that every runtime shares: which
// requests are upgrades for us, the GET-only rule and subprotocol choice. Only the upgrade itself
// (Deno.upgradeWebSocket, workerd's WebSocketPair, ...) differs, and the runtime adapter passes it in.
// The protocol server and graphql-ws are loaded by the first upgrade, before its socket is accepted,
// so an isolate that never sees one never evaluates them.
import type { GraphQLWebSocketOptions, GraphQLWebSocketServer } from './graphql-ws-adapter.ts';
import { onDemand, type OnDemand } from '../handler/on-demand.ts';
import { assertSchemaOption, isWebSocketUpgrade, selectSubprotocol } from './websocket-upgrade.ts';

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
  assertSchemaOption(adapterOptions);
  const loaded = onDemand(() => import('./graphql-ws-adapter.ts').then(({ createGraphQLWebSocketServer }) => createGraphQLWebSocketServer(adapterOptions)));
  const fetch = (request: Request): Response | Promise<Response> => {
    if (!isWebSocketUpgrade(request) || (path !== null && new URL(request.url).pathname !== path)) {
      return handler(request);
    }
    if (request.method !== 'GET') return new Response('WebSocket upgrades must use GET', { status: 405, headers: { allow: 'GET' } });
    const protocol = selectSubprotocol(request.headers.get('sec-websocket-protocol'));
    const server = loaded.value;
    return server !== undefined ? upgrade(request, protocol, server) : loaded.load().then((ready) => upgrade(request, protocol, ready));
  };
  return Object.assign(fetch, { webSocketServer: serverBeforeLoad(loaded) });
}

/** The server as seen before and after it is loaded: until then nothing is open and nothing streams. */
function serverBeforeLoad(loaded: OnDemand<GraphQLWebSocketServer>): GraphQLWebSocketServer {
  return {
    selectProtocol: selectSubprotocol,
    serve: (socket, init) => loaded.load().then((server) => server.serve(socket, init)),
    get openSockets() {
      return loaded.value?.openSockets ?? 0;
    },
    sockets: () => loaded.value?.sockets() ?? [],
    subscriptionStats: () => loaded.value?.subscriptionStats() ?? { executions: 0, members: 0, open: 0 },
    close: (code, reason) => loaded.value?.close(code, reason) ?? Promise.resolve(),
  };
}
