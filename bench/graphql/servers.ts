// The servers the benchmark compares, all on the same countries schema object (same resolvers, same
// precomputed dataset), so only the server differs. Each starts on 127.0.0.1 and a free port.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse } from 'graphql';
import { executeWhole } from '../../src/execution/graphql-compat.ts';
import { countriesSchema } from '../../src/countries/index.ts';
import { peerSchema } from './peer-schema.ts';
import { createCountriesHandler } from '../../src/index.ts';
import { startServer } from '../../node/graphql/app.ts';
import { createMetrics } from '../../node/graphql/metrics.ts';
import { jsonContentType } from '../../src/handler/responses.ts';
import { benchQueries, getPath, postBody } from './queries.ts';

export interface RunningBenchServer {
  port: number;
  close(): Promise<void>;
}

export interface BenchServer {
  name: string;
  label: string;
  /** Run only when named in `--only`: a reference for finding costs, not one of the compared servers. */
  optional?: true;
  start(): Promise<RunningBenchServer>;
}

/** The exact response bytes graphql-js gives for each bench query (what every server should answer). */
export function expectedBodies(): Map<string, string> {
  const bodies = new Map<string, string>();
  for (const q of benchQueries) {
    bodies.set(q.id, JSON.stringify(executeWhole({ schema: countriesSchema, document: parse(q.query), variableValues: q.variables })));
  }
  return bodies;
}

/** The expected bytes keyed as a request carries its query: GET by path and search, POST by body text. */
function fixedAnswers(): { byGet: Map<string, string>; byPost: Map<string, string> } {
  const bodies = expectedBodies();
  const byGet = new Map<string, string>();
  const byPost = new Map<string, string>();
  for (const q of benchQueries) {
    if (q.method === 'GET') byGet.set(getPath('/graphql', q.query), bodies.get(q.id)!);
    else byPost.set(postBody(q), bodies.get(q.id)!);
  }
  return { byGet, byPost };
}

/** The path and search of an absolute URL. */
function pathAndSearch(url: string): string {
  return url.slice(url.indexOf('/', url.indexOf('//') + 2));
}

/** Listens on a free loopback port; `backlog` for servers that take many connections at once. */
export function listening(server: Server, backlog?: number): Promise<RunningBenchServer> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: 0, host: '127.0.0.1', backlog }, () => {
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
      const { byGet, byPost } = fixedAnswers();
      const headers = { 'content-type': jsonContentType };
      const app = new Hono();
      app.get('/graphql', (c) => {
        const body = byGet.get(pathAndSearch(c.req.url));
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
    name: 'node-http',
    label: 'raw node:http, fixed bytes',
    optional: true,
    async start() {
      // The ceiling's bytes from node:http with no framework: what Node's HTTP server itself costs.
      const { byGet, byPost } = fixedAnswers();
      const headers = { 'content-type': jsonContentType };
      const server = createServer((req, res) => {
        const send = (body: string | undefined) => {
          if (body === undefined) res.writeHead(400).end('unknown query');
          else res.writeHead(200, { ...headers, 'content-length': Buffer.byteLength(body) }).end(body);
        };
        if (req.method === 'GET') return send(byGet.get(req.url ?? ''));
        let text = '';
        req.setEncoding('utf8');
        req.on('data', (chunk: string) => (text += chunk));
        req.on('end', () => send(byPost.get(text)));
      });
      return listening(server);
    },
  },
  {
    name: 'shell',
    label: "skiff's Node server, fixed bytes",
    optional: true,
    async start() {
      // Our dev server (startServer, the Response global) around a handler that makes the request
      // reads our GraphQL handler makes before any GraphQL work (the URL, accept, content-type,
      // content-length, the body) and answers the ceiling's bytes: what our Node wrapper costs apart
      // from GraphQL and the production features. Against the ceiling: `--only ceiling,shell,skiff`.
      const { byGet, byPost } = fixedAnswers();
      const answer = (body: string | undefined) =>
        body === undefined ? new Response('unknown query', { status: 400 }) : new Response(body, { status: 200, headers: { 'content-type': jsonContentType } });
      const handler = (request: Request): Response | Promise<Response> => {
        const url = request.url;
        request.headers.get('accept');
        if (request.method === 'GET') return answer(byGet.get(pathAndSearch(url)));
        request.headers.get('content-type');
        request.headers.get('content-length');
        return request.text().then((text) => answer(byPost.get(text)));
      };
      const server = await startServer({ handler, port: 0, hostname: '127.0.0.1' });
      return { port: server.port, close: () => server.close() };
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
    name: 'skiff-graphql16',
    label: 'skiff on graphql 16',
    optional: true,
    async start() {
      // The same server with graphql 16 in its process (http-bench.ts resolves it there): what graphql
      // 17 costs or saves, against `skiff` in the same run, `--only skiff,skiff-graphql16`.
      const server = await startServer({ handler: createCountriesHandler(), port: 0, hostname: '127.0.0.1' });
      return { port: server.port, close: () => server.close() };
    },
  },
  {
    name: 'skiff-metrics',
    label: 'skiff with Prometheus metrics on',
    optional: true,
    async start() {
      // What METRICS=on costs per request: against `skiff` in the same run, `--only skiff,skiff-metrics`.
      const metrics = createMetrics();
      const handler = createCountriesHandler({ onResponse: metrics.onResponse });
      const server = await startServer({ handler, port: 0, hostname: '127.0.0.1', metrics });
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
      await app.register(mercurius, { schema: peerSchema, jit: 1, path: '/graphql' });
      await app.listen({ port: 0, host: '127.0.0.1' });
      return { port: (app.server.address() as AddressInfo).port, close: () => app.close() };
    },
  },
  {
    name: 'yoga',
    label: 'graphql-yoga (node:http)',
    async start() {
      const { createYoga } = await import('graphql-yoga');
      const yoga = createYoga({ schema: peerSchema, graphqlEndpoint: '/graphql', logging: false, landingPage: false });
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
        schema: peerSchema,
        // Its production default (NODE_ENV=production, as the bench runs) refuses the introspection queries the others answer.
        introspection: true,
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
