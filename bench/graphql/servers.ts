// The servers the benchmark compares, all on the same countries schema object (same resolvers, same
// precomputed dataset), so only the server differs. Each starts on 127.0.0.1 and a free port.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { execute, parse } from 'graphql';
import { countriesSchema } from '../../src/countries/index.ts';
import { createCountriesHandler } from '../../src/index.ts';
import { startServer } from '../../node/graphql/app.ts';
import { benchQueries, getPath, postBody } from './queries.ts';

export interface RunningBenchServer {
  port: number;
  close(): Promise<void>;
}

export interface BenchServer {
  name: string;
  label: string;
  start(): Promise<RunningBenchServer>;
}

/** The exact response bytes graphql-js gives for each bench query (what every server should answer). */
export function expectedBodies(): Map<string, string> {
  const bodies = new Map<string, string>();
  for (const q of benchQueries) {
    bodies.set(q.id, JSON.stringify(execute({ schema: countriesSchema, document: parse(q.query) })));
  }
  return bodies;
}

function listening(server: Server): Promise<RunningBenchServer> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      resolve({
        port: (server.address() as AddressInfo).port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}

export const benchServers: readonly BenchServer[] = [
  {
    name: 'ceiling',
    label: 'ceiling: raw Hono, fixed bytes',
    async start() {
      // The same bytes every GraphQL server must produce, looked up by the request's query string
      // (GET) or body text (POST): what serving this data costs with no GraphQL at all.
      const { Hono } = await import('hono');
      const { serve } = await import('@hono/node-server');
      const bodies = expectedBodies();
      const byGet = new Map<string, string>();
      const byPost = new Map<string, string>();
      for (const q of benchQueries) {
        if (q.method === 'GET') byGet.set(getPath('/graphql', q.query), bodies.get(q.id)!);
        else byPost.set(postBody(q.query), bodies.get(q.id)!);
      }
      const headers = { 'content-type': 'application/json; charset=utf-8' };
      const app = new Hono();
      app.get('/graphql', (c) => {
        const url = c.req.url;
        const body = byGet.get(url.slice(url.indexOf('/', url.indexOf('//') + 2)));
        return body === undefined ? c.text('unknown query', 400) : c.body(body, 200, headers);
      });
      app.post('/graphql', async (c) => {
        const body = byPost.get(await c.req.text());
        return body === undefined ? c.text('unknown query', 400) : c.body(body, 200, headers);
      });
      const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as Server;
      await new Promise<void>((resolve, reject) => {
        server.once('listening', resolve);
        server.once('error', reject);
      });
      return {
        port: (server.address() as AddressInfo).port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      };
    },
  },
  {
    name: 'skiff',
    label: 'skiff (Hono, @hono/node-server)',
    async start() {
      const server = await startServer({ handler: createCountriesHandler(), port: 0, hostname: '127.0.0.1' });
      return { port: server.port, close: () => server.close() };
    },
  },
  {
    name: 'mercurius',
    label: 'Mercurius + graphql-jit (Fastify)',
    async start() {
      const { default: Fastify } = await import('fastify');
      const { default: mercurius } = await import('mercurius');
      const app = Fastify({ logger: false });
      // jit: 1 compiles a query with graphql-jit from its second run on.
      await app.register(mercurius, { schema: countriesSchema, jit: 1, path: '/graphql' });
      await app.listen({ port: 0, host: '127.0.0.1' });
      return { port: (app.server.address() as AddressInfo).port, close: () => app.close() };
    },
  },
  {
    name: 'yoga',
    label: 'graphql-yoga (node:http)',
    async start() {
      const { createYoga } = await import('graphql-yoga');
      const yoga = createYoga({ schema: countriesSchema, graphqlEndpoint: '/graphql', logging: false, landingPage: false });
      return listening(createServer(yoga));
    },
  },
  {
    name: 'apollo',
    label: 'Apollo Server (standalone)',
    async start() {
      const { ApolloServer } = await import('@apollo/server');
      const { startStandaloneServer } = await import('@apollo/server/standalone');
      const { ApolloServerPluginInlineTraceDisabled } = await import('@apollo/server/plugin/disabled');
      // CSRF prevention would refuse the bench's plain GETs. Inline tracing (on by default for a
      // subgraph) only acts on requests asking for traces, which the bench never sends; disabling it
      // just silences its startup notice. Everything else is Apollo's default.
      const server = new ApolloServer({
        schema: countriesSchema,
        csrfPrevention: false,
        plugins: [ApolloServerPluginInlineTraceDisabled()],
      });
      const { url } = await startStandaloneServer(server, { listen: { port: 0, host: '127.0.0.1' } });
      return { port: Number(new URL(url).port), close: () => server.stop() };
    },
  },
];

export function benchServer(name: string): BenchServer {
  const server = benchServers.find((s) => s.name === name);
  if (!server) throw new Error(`Unknown bench server "${name}": one of ${benchServers.map((s) => s.name).join(', ')}`);
  return server;
}
