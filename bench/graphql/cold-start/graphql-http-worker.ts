// graphql-http's own fetch handler on the countries schema, as its README sets it up.
import { createHandler } from 'graphql-http/lib/use/fetch';
import { peerSchema } from '../peer-schema.ts';

const handler = createHandler({ schema: peerSchema });

export default {
  fetch(request: Request): Promise<Response> | Response {
    if (new URL(request.url).pathname !== '/graphql') return new Response(null, { status: 404 });
    return handler(request);
  },
};
