// The countries API ready to serve. The runtime entries (edge/) import this module rather than the
// package index, whose re-exports (pub/sub engines, the WebSocket server) would otherwise be bundled
// into what every isolate loads at start.
import { countriesSchema } from './countries/index.ts';
import { createGraphQLHandler } from './handler/create-handler.ts';
import type { GraphQLFetchHandler, GraphQLHandlerOptions } from './handler/options.ts';

/**
 * The countries API with any handler options but the schema (e.g. `path: null` on Vercel). Its
 * resolvers are synchronous reads of a static dataset, so compiled execution is on by default, and
 * so are @defer and @stream for clients that ask for multipart or SSE.
 */
export function createCountriesHandler(options: Omit<GraphQLHandlerOptions, 'schema'> = {}): GraphQLFetchHandler {
  return createGraphQLHandler({ compiledExecution: true, incrementalDelivery: true, ...options, schema: countriesSchema });
}

/** The countries API on `/graphql`, in the `{ fetch }` shape Deno, workerd and Bun serve directly. */
export default { fetch: createCountriesHandler() };
