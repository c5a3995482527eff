// Bundled and run inside an edge runtime (workerd, Deno): `GET /loop?impl=&query=&n=` handles n
// requests in-process with one handler and answers when done, so the caller's clock measures the
// handler, not the transport (workerd's own clock stands still while a request runs).
import { createHandler as createPlainHandler } from 'graphql-http/lib/use/fetch';
import { countriesSchema } from '../../../src/countries/index.ts';
import { peerSchema } from '../peer-schema.ts';
import { createGraphQLHandler } from '../../../src/handler/create-handler.ts';
import { benchQueries, requestFor } from '../queries.ts';

type Handler = (request: Request) => Promise<Response>;

const handlers: Record<string, Handler> = {
  skiff: createGraphQLHandler({ schema: countriesSchema, compiledExecution: true }),
  // graphql-http's own fetch handler, as its README sets it up.
  'graphql-http': createPlainHandler({ schema: peerSchema }),
};

async function loop(impl: string, queryId: string, n: number): Promise<Response> {
  const handler = handlers[impl];
  const query = benchQueries.find((q) => q.id === queryId);
  if (!handler || !query || !(n > 0)) return new Response('bad loop parameters', { status: 400 });
  let bytes = 0;
  for (let i = 0; i < n; i++) {
    const response = await handler(requestFor(query));
    const text = await response.text();
    if (response.status !== 200) return new Response(`${impl} answered ${response.status}: ${text}`, { status: 500 });
    bytes += text.length;
  }
  return Response.json({ impl, query: queryId, n, bytes });
}

export default {
  fetch(request: Request): Promise<Response> | Response {
    const url = new URL(request.url);
    if (url.pathname !== '/loop') return new Response('not found', { status: 404 });
    return loop(url.searchParams.get('impl') ?? '', url.searchParams.get('query') ?? '', Number(url.searchParams.get('n')));
  },
};
