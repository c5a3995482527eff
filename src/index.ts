// The runtime-agnostic GraphQL endpoint: the handler factory, and the countries API ready to serve.
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
export type { HttpStreamOptions, HttpSubscriptionShareKey } from './streams/stream-options.ts';
export { canDivertStream, divertStream, type StreamSink } from './streams/stream-channel.ts';

export { createCountriesHandler, default } from './countries-endpoint.ts';
