// The runtime-agnostic GraphQL endpoint: the handler factory, and the countries API ready to serve.
import { countriesSchema } from './countries/index.ts';
import { createGraphQLHandler } from './handler/create-handler.ts';
import type { GraphQLFetchHandler, GraphQLHandlerOptions } from './handler/options.ts';

export { createGraphQLHandler } from './handler/create-handler.ts';
export type {
  ContextFactory,
  FormatError,
  GraphQLFetchHandler,
  GraphQLHandlerOptions,
  OperationContext,
  RequestParams,
} from './handler/options.ts';
export type { HealthOptions } from './handler/health.ts';
export * from './subscriptions/index.ts';
export type { HttpStreamOptions, HttpSubscriptionShareKey } from './streams/http-subscriptions.ts';
export { canDivertStream, divertStream, type StreamSink } from './streams/stream-channel.ts';

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
