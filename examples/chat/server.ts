// The chat example on Node: GraphQL over HTTP (queries, mutations) and over WebSocket
// (subscriptions) on the same /graphql URL, with the in-process pub/sub or Redis when given one.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { serve } from '@hono/node-server';
import { createApp } from '../../node/graphql/app.ts';
import { attachGraphQLWebSocket, type NodeGraphQLWebSocketOptions } from '../../node/graphql/websocket.ts';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import type { PubSub } from '../../src/subscriptions/pubsub.ts';
import { createChatSchema, type ChatTopics } from './schema.ts';

export interface ChatServerOptions {
  /** 0 picks a free port. Default 4000. */
  port?: number;
  hostname?: string;
  /** Default: in-process, i.e. this server only. */
  pubsub?: PubSub<ChatTopics>;
  /** Options for the WebSocket side (connectionInitWaitTimeout, onConnect, keepAlive…). */
  webSocket?: Omit<NodeGraphQLWebSocketOptions, 'schema'>;
}

export interface ChatServer {
  /** http://host:port/graphql */
  url: string;
  /** ws://host:port/graphql */
  wsUrl: string;
  port: number;
  /** Closes sockets (1001), the pub/sub and the HTTP server. */
  close(): Promise<void>;
}

export async function startChatServer(options: ChatServerOptions = {}): Promise<ChatServer> {
  const pubsub = options.pubsub;
  const schema = createChatSchema({ pubsub });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = serve({
      fetch: createApp(createGraphQLHandler({ schema })).fetch,
      port: options.port ?? 4000,
      hostname: options.hostname,
    }) as Server;
    s.once('error', reject);
    s.once('listening', () => {
      s.off('error', reject);
      resolve(s);
    });
  });
  const ws = attachGraphQLWebSocket(server, { ...options.webSocket, schema });
  const { port } = server.address() as AddressInfo;
  const host = !options.hostname || options.hostname === '0.0.0.0' || options.hostname === '::' ? 'localhost' : options.hostname;
  const origin = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  return {
    url: `http://${origin}/graphql`,
    wsUrl: `ws://${origin}/graphql`,
    port,
    async close() {
      await ws.close();
      await pubsub?.close();
      await new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeIdleConnections();
      });
    },
  };
}
