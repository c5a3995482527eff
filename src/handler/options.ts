import type { ExecutionArgs, ExecutionResult, GraphQLSchema, ValidationRule } from 'graphql';
import type { FormatError, OperationContext, RequestParams } from 'graphql-http';

/** A fetch-style handler: what Deno, workerd, Vercel edge and Hono all call. */
export type GraphQLFetchHandler = (request: Request) => Promise<Response>;

/** Builds the GraphQL context value for one operation from the incoming web request. */
export type ContextFactory<Context extends OperationContext> = (
  request: Request,
  params: RequestParams,
) => Context | Promise<Context>;

export interface GraphQLHandlerOptions<Context extends OperationContext = undefined> {
  /** The schema every operation is validated against and executed on. */
  schema: GraphQLSchema;
  /**
   * The URL path the endpoint answers on (exact match); any other path gets 404.
   * `null` answers on every path, for platforms that route by file (Vercel's `api/`).
   * Default `/graphql`.
   */
  path?: string | null;
  /** Largest accepted POST body in bytes; bigger bodies get 413. Default 1 MiB. */
  maxBodyBytes?: number;
  /** How many parsed and validated documents to keep (LRU, keyed on the query text). 0 disables. Default 1000. */
  documentCacheSize?: number;
  /** Rules run after graphql-js's `specifiedRules`. Fixed per handler, so validation results can be cached. */
  validationRules?: readonly ValidationRule[];
  /** The context value, or a function building it per request. */
  context?: Context | ContextFactory<Context>;
  /** The root value handed to top-level resolvers. */
  rootValue?: unknown;
  /** Replaces graphql-js `execute` (same contract), e.g. for a compiled executor. */
  execute?: (args: ExecutionArgs) => ExecutionResult | Promise<ExecutionResult>;
  /** Maps every reported error (GraphQL or request error) before it is serialized. */
  formatError?: FormatError;
  /**
   * Called with unexpected failures (a throwing context factory, a bug); the client gets a bare 500
   * without details. Default: `console.error`.
   */
  onInternalError?: (error: unknown, request: Request) => void;
}

export const defaults = {
  path: '/graphql',
  maxBodyBytes: 1024 * 1024,
  documentCacheSize: 1000,
} as const;
