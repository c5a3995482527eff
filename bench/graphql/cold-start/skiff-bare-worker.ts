// Our handler on the countries schema with every optional part off (limits, ETag and Cache-Control,
// persisted queries, health, HTTP streams, @defer/@stream, compiled plans) and no WebSocket server: what
// the handler's core costs at start, against graphql-http's handler doing the same work.
import { countriesSchema } from '../../../src/countries/index.ts';
import { createGraphQLHandler } from '../../../src/handler/create-handler.ts';

const handler = createGraphQLHandler({
  schema: countriesSchema,
  limits: false,
  etag: false,
  cacheControl: false,
  persistedQueries: false,
  health: false,
  subscriptions: false,
});

export default {
  fetch(request: Request): Promise<Response> {
    return handler(request);
  },
};
