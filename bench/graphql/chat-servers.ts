// The subscription bench's servers: the chat example schema (examples/chat/schema.ts, the same
// resolvers and in-process pub/sub) behind our Node server and behind Mercurius, both speaking
// graphql-transport-ws on /graphql.
import type { AddressInfo } from 'node:net';
import { startChatServer } from '../../examples/chat/server.ts';
import { createChatSchema } from '../../examples/chat/schema.ts';

export interface ChatBenchServer {
  name: string;
  label: string;
  start(): Promise<{ port: number; close(): Promise<void> }>;
}

export const chatServers: ChatBenchServer[] = [
  {
    name: 'chat-skiff',
    label: 'skiff (shared executions)',
    async start() {
      const server = await startChatServer({ port: 0, hostname: '127.0.0.1' });
      return { port: server.port, close: () => server.close() };
    },
  },
  {
    name: 'chat-mercurius',
    label: 'Mercurius 16 (Fastify)',
    async start() {
      const { default: Fastify } = await import('fastify');
      const { default: mercurius } = await import('mercurius');
      const app = Fastify({ logger: false });
      await app.register(mercurius, { schema: createChatSchema(), subscription: true, path: '/graphql' });
      await app.listen({ port: 0, host: '127.0.0.1' });
      return { port: (app.server.address() as AddressInfo).port, close: () => app.close() };
    },
  },
];
