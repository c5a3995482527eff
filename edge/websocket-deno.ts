// Deno: GraphQL subscriptions over `Deno.upgradeWebSocket` on the GraphQL path, in front of any
// fetch handler (HTTP requests pass through untouched).
import type { GraphQLWebSocketServer } from '../src/subscriptions/graphql-ws-adapter.ts';
import { withFetchWebSocket, type FetchHandler, type FetchWebSocketOptions } from '../src/subscriptions/fetch-upgrade.ts';

// The one Deno API used here, declared so tsc (with Node's types) checks this file too.
declare const Deno: {
  upgradeWebSocket(
    request: Request,
    options?: { protocol?: string; idleTimeout?: number },
  ): {
    socket: WebSocket;
    response: Response;
  };
};

export type { FetchHandler };
export type DenoGraphQLWebSocketOptions = FetchWebSocketOptions;

/** `fetch` answering WebSocket upgrades on `path` with GraphQL over WebSocket, and the rest with `handler`. */
export function withGraphQLWebSocket(
  handler: FetchHandler,
  options: DenoGraphQLWebSocketOptions,
): FetchHandler & { readonly webSocketServer: GraphQLWebSocketServer } {
  return withFetchWebSocket(handler, options, (request, protocol, server) => {
    let upgraded: { socket: WebSocket; response: Response };
    try {
      upgraded = Deno.upgradeWebSocket(request, protocol ? { protocol } : {});
    } catch (error) {
      // A malformed handshake (missing key, wrong version): tell the client what is wrong.
      return new Response(`Bad WebSocket upgrade: ${(error as Error).message}`, { status: 400 });
    }
    void server.serve(upgraded.socket, { request, protocol: protocol ?? '' });
    return upgraded.response;
  });
}
