// The chat example on Node: GraphQL over HTTP (queries, mutations, and subscriptions over SSE and
// multipart) and over WebSocket on the same /graphql URL, on the Node dev server, with the
// in-process pub/sub or a shared one (Redis) when given.
import { peerAddress, startServer } from '../../node/graphql/app.ts';
import type { NodeGraphQLWebSocketOptions } from '../../node/graphql/websocket.ts';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import type { PubSub } from '../../src/subscriptions/pubsub.ts';
import type { HttpStreamOptions } from '../../src/streams/stream-options.ts';
import type { GraphQLWebSocketServer } from '../../src/subscriptions/graphql-ws-adapter.ts';
import { createChatSchema, type ChatTopics } from './schema.ts';

export interface ChatServerOptions {
  /** 0 picks a free port. Default 4000. */
  port?: number;
  hostname?: string;
  /** Default: in-process, i.e. this server only. */
  pubsub?: PubSub<ChatTopics>;
  /** Options for the WebSocket side (connectionInitWaitTimeout, onConnect, keepAlive…). */
  webSocket?: Omit<NodeGraphQLWebSocketOptions, 'schema' | 'path'>;
  /** GraphiQL (with subscriptions) for browsers on the same URL. Default off. */
  graphiql?: boolean;
  /** Options for subscriptions over SSE and multipart (keep-alive, buffers, the per-address cap). */
  streams?: Omit<HttpStreamOptions, 'clientKey'>;
}

export interface ChatServer {
  /** http://host:port/graphql */
  url: string;
  /** ws://host:port/graphql */
  wsUrl: string;
  port: number;
  /** The WebSocket side (open sockets, shared subscription executions). */
  webSocketServer: GraphQLWebSocketServer;
  /** Closes sockets (1001), the HTTP server and the pub/sub. */
  close(): Promise<void>;
}

export async function startChatServer(options: ChatServerOptions = {}): Promise<ChatServer> {
  const schema = createChatSchema({ pubsub: options.pubsub });
  const server = await startServer({
    // Clients reach this server directly: its stream cap counts per socket address.
    handler: createGraphQLHandler({ schema, incrementalDelivery: true, subscriptions: { ...options.streams, clientKey: peerAddress } }),
    peerAddresses: true,
    port: options.port ?? 4000,
    hostname: options.hostname,
    graphiql: options.graphiql,
    subscriptions: { ...options.webSocket, schema },
  });
  return {
    url: server.url,
    wsUrl: server.url.replace(/^http/, 'ws'),
    port: server.port,
    webSocketServer: server.webSocketServer!,
    async close() {
      await server.close();
      await options.pubsub?.close();
    },
  };
}
