// What a fetch handler needs to recognise a GraphQL over WebSocket upgrade before the protocol
// server (graphql-ws-adapter.ts, with graphql-ws) is loaded: that is loaded by the first upgrade.

/** The graphql-transport-ws subprotocol, as graphql-ws names it. */
export const GRAPHQL_TRANSPORT_WS_PROTOCOL = 'graphql-transport-ws';

/** Whether `request` asks to switch to WebSocket. */
export function isWebSocketUpgrade(request: Request): boolean {
  return (request.headers.get('upgrade') ?? '').toLowerCase() === 'websocket';
}

/**
 * The subprotocol to answer a `Sec-WebSocket-Protocol` request header with; undefined when the client
 * offered none we speak (accept anyway: the server then closes with 4406).
 */
export function selectSubprotocol(header: string | null | undefined): string | undefined {
  if (!header) return undefined;
  const offered = header.split(',').map((p) => p.trim());
  return offered.includes(GRAPHQL_TRANSPORT_WS_PROTOCOL) ? GRAPHQL_TRANSPORT_WS_PROTOCOL : undefined;
}

/** Throws unless `options.schema` is a GraphQLSchema (checked before the server is loaded). */
export function assertSchemaOption(options: { schema?: unknown }): void {
  const schema = options.schema as { getQueryType?: unknown } | undefined;
  if (!schema || typeof schema.getQueryType !== 'function') {
    throw new TypeError('createGraphQLWebSocketServer: `schema` must be a GraphQLSchema');
  }
}
