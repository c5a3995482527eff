// Cloudflare Workers (workerd): GraphQL subscriptions over a `WebSocketPair` on the GraphQL path, in
// front of any fetch handler. The pub/sub a Worker's subscriptions see is per isolate: to reach
// subscribers on every isolate, terminate the sockets in a Durable Object (see the README).
import type { GraphQLWebSocketServer, WebSocketLike } from '../src/subscriptions/graphql-ws-adapter.ts';
import { withFetchWebSocket, type FetchHandler, type FetchWebSocketOptions } from '../src/subscriptions/fetch-upgrade.ts';

// The workerd APIs used here, declared so tsc (with Node's types) checks this file too.
interface WorkerWebSocket extends WebSocketLike {
  accept(): void;
}
declare const WebSocketPair: new () => { 0: WorkerWebSocket; 1: WorkerWebSocket };

export type { FetchHandler };
export type WorkerdGraphQLWebSocketOptions = FetchWebSocketOptions;

/** `fetch` answering WebSocket upgrades on `path` with GraphQL over WebSocket, and the rest with `handler`. */
export function withGraphQLWebSocket(
  handler: FetchHandler,
  options: WorkerdGraphQLWebSocketOptions,
  placement: { inDurableObject?: boolean } = {},
): FetchHandler & { readonly webSocketServer: GraphQLWebSocketServer } {
  // In a stateless Worker each socket belongs to the request that upgraded it, and workerd refuses
  // writes to it from any other request's work: one execution cannot serve several sockets, so
  // subscriptions are not shared there. A Durable Object's sockets share the object's context.
  const adapterOptions = placement.inDurableObject ? options : { ...options, subscriptionShareKey: false as const };
  return withFetchWebSocket(handler, adapterOptions, (request, protocol, server) => {
    const pair = new WebSocketPair();
    const [client, socket] = [pair[0], pair[1]];
    socket.accept();
    void server.serve(socket, { request, protocol: protocol ?? '' });
    const headers = protocol ? { 'sec-websocket-protocol': protocol } : undefined;
    // `webSocket` is workerd's extension to ResponseInit.
    return new Response(null, { status: 101, headers, webSocket: client } as ResponseInit);
  });
}
