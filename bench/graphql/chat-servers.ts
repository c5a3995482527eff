// The subscription bench's servers: the chat example schema (examples/chat/schema.ts, the same
// resolvers and in-process pub/sub) behind our Node server and behind Mercurius, both speaking
// graphql-transport-ws on /graphql, and behind our server and graphql-yoga speaking GraphQL over
// server-sent events (graphql-sse's distinct connections) on /graphql. Each publish of a burst event is
// timed where the resolver hands it to the pub/sub (publish-clock.ts), the same point for all.
import type { AddressInfo } from 'node:net';
import { startChatServer } from '../../examples/chat/server.ts';
import { createChatSchema, type ChatTopics } from '../../examples/chat/schema.ts';
import { createInProcessPubSub, type PubSub } from '../../src/subscriptions/pubsub.ts';
import { recordPublish } from './publish-clock.ts';
import { SERVER_NODE_FLAGS } from '../../scripts/build-server.mjs';
import { listening } from './servers.ts';

/** The in-process pub/sub both servers use, with the time of every burst event's publish recorded. */
function timedPubSub(): PubSub<ChatTopics> {
  const inner = createInProcessPubSub<ChatTopics>();
  return {
    publish(topic, payload) {
      recordPublish(payload.text);
      return inner.publish(topic, payload);
    },
    subscribe: (topic, options) => inner.subscribe(topic, options),
    close: () => inner.close(),
  };
}

export interface ChatBenchServer {
  name: string;
  label: string;
  /** Node flags the server runs with: what its own start command passes. */
  nodeFlags: readonly string[];
  /** How its subscribers subscribe: one WebSocket each, or one SSE response each. */
  transport: 'websocket' | 'sse';
  start(): Promise<{ port: number; close(): Promise<void> }>;
}

export const chatServers: ChatBenchServer[] = [
  {
    name: 'chat-skiff',
    label: 'skiff (shared executions)',
    // As `npm start` and the server image run it.
    nodeFlags: SERVER_NODE_FLAGS,
    transport: 'websocket',
    start: startSkiff,
  },
  {
    name: 'chat-mercurius',
    label: 'Mercurius 16 (Fastify)',
    nodeFlags: [],
    transport: 'websocket',
    async start() {
      const { default: Fastify } = await import('fastify');
      const { default: mercurius } = await import('mercurius');
      const app = Fastify({ logger: false });
      await app.register(mercurius, { schema: createChatSchema({ pubsub: timedPubSub() }), subscription: true, path: '/graphql' });
      await app.listen({ port: 0, host: '127.0.0.1' });
      return { port: (app.server.address() as AddressInfo).port, close: () => app.close() };
    },
  },
  {
    name: 'chat-skiff-sse',
    label: 'skiff over SSE',
    nodeFlags: SERVER_NODE_FLAGS,
    transport: 'sse',
    start: startSkiff,
  },
  {
    name: 'chat-yoga-sse',
    label: 'graphql-yoga 5 over SSE',
    nodeFlags: [],
    transport: 'sse',
    async start() {
      const { createYoga } = await import('graphql-yoga');
      const { createServer } = await import('node:http');
      const yoga = createYoga({ schema: createChatSchema({ pubsub: timedPubSub() }), graphqlEndpoint: '/graphql', logging: false });
      // The same accept queue as skiff's server: a thousand subscribers connect at once.
      return listening(createServer(yoga), 4096);
    },
  },
];

/** The chat example's own Node server (WebSocket and HTTP streams on the same URL). */
async function startSkiff(): Promise<{ port: number; close(): Promise<void> }> {
  // Every SSE subscriber comes from this one address: lift the per-address cap.
  const server = await startChatServer({ port: 0, hostname: '127.0.0.1', pubsub: timedPubSub(), streams: { maxStreamsPerClient: 1_000_000 } });
  return { port: server.port, close: () => server.close() };
}
