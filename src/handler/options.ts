import type { ExecutionArgs, ExecutionResult, GraphQLError, GraphQLSchema, ValidationRule } from 'graphql';
import type { CacheControlOptions } from './cache-control.ts';
import type { ExecutionOptions } from '../execution/execution-bounds.ts';
import type { Tracer } from '@opentelemetry/api';
import type { TracingOptions } from './tracing.ts';
import type { CorsOptions } from './cors.ts';
import type { HealthOptions } from './health.ts';
import type { LimitOptions } from './limits.ts';
import type { PersistedQueriesOptions } from './persisted-queries.ts';
import type { ResponseCacheOptions } from './response-cache.ts';
import type { HttpStatusCodes } from './status-codes.ts';
import type { BatchingOptions } from './batching.ts';
import type { TrustedDocumentsOptions } from './trusted-documents.ts';
import type { HttpStreamOptions } from '../streams/stream-options.ts';
import type { SharedExecutionStats } from '../subscriptions/shared-executions.ts';

/** The parameters of a GraphQL request, from a GET's query string or a POST's JSON body. */
export interface RequestParams {
  query: string;
  operationName?: string | null;
  variables?: Record<string, unknown> | null;
  extensions?: Record<string, unknown> | null;
}

/** What a context value may be (as in graphql-http, so its handlers' contexts fit). */
export type OperationContext = Record<PropertyKey, unknown> | symbol | number | string | boolean | undefined | null;

/** Maps an error before it is serialized for the client. */
export type FormatError = (error: Readonly<GraphQLError | Error>) => GraphQLError | Error;

/** A fetch-style handler: what Deno, workerd, Vercel edge and Hono all call. */
export interface GraphQLFetchHandler {
  (request: Request): Promise<Response>;
  /**
   * The same handler for hosts that take a plain Response as well as a promise of one (Hono,
   * `Deno.serve`, workerd): a request answered without waiting (a cached query over GET) comes back
   * as the Response itself. That saves a promise turn, and on @hono/node-server its slower
   * asynchronous response path. `body` is the request's body, already read as text by a server that
   * reads small bodies itself (the Node server does): a POST then needs no waiting either.
   */
  readonly fetch: (request: Request, body?: string) => Response | Promise<Response>;
  /**
   * Subscriptions streaming over SSE and multipart now (`open`), and the executions behind them with
   * their members (shared executions count once); all zero when HTTP subscriptions are off.
   */
  subscriptionStats(): SharedExecutionStats & { open: number };
  /**
   * Ends every open subscription stream without a completion, so clients reconnect: for a server
   * that shuts down (streams would otherwise hold their connections open to the end).
   */
  closeStreams(): void;
  /** Whether it serves subscriptions over SSE and multipart (the schema has them, and they are on). */
  readonly httpSubscriptions: boolean;
}

/** Builds the GraphQL context value for one operation from the incoming web request. */
export type ContextFactory<Context extends OperationContext> = (request: Request, params: RequestParams) => Context | Promise<Context>;

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
  /**
   * Runs cached, valid queries on a compiled plan (src/execution) that writes the response bytes
   * directly. Only for schemas whose query resolvers are synchronous and free of side effects: an
   * operation the plan cannot finish (a resolver returned a promise) is run again by graphql-js, so
   * its resolvers run twice. The plan code is loaded when a first document runs a second time; until
   * it is there, graphql-js runs every query. Default false; the countries handler turns it on. Ignored
   * with `execute`.
   */
  compiledExecution?: boolean;
  /** Replaces graphql-js `execute` (same contract), e.g. for a compiled executor. */
  execute?: (args: ExecutionArgs) => ExecutionResult | Promise<ExecutionResult>;
  /** Replaces graphql-js `subscribe` (same contract) for subscriptions over SSE and multipart. */
  subscribe?: (args: ExecutionArgs) => Promise<AsyncGenerator<ExecutionResult, void, void> | ExecutionResult>;
  /**
   * Subscriptions over HTTP streams, negotiated by Accept: server-sent events (`text/event-stream`,
   * graphql-sse's distinct connections) and multipart (`multipart/mixed;subscriptionSpec="1.0"`,
   * Apollo Client). On by default for a schema with a subscription type; `false` turns them off.
   * Limits and keep-alive: docs/graphql/subscriptions.md.
   */
  subscriptions?: HttpStreamOptions | false;
  /**
   * @defer and @stream: the schema gains both directives, and an operation using them from a client that
   * accepts a stream (multipart/mixed, as Apollo Client and urql send, or SSE) gets its result
   * incrementally; a client asking for JSON gets the whole result as before. Such operations run on
   * the incremental executor rather than the compiled plan. Keep-alive and buffer bounds come from
   * `subscriptions`. Default false.
   */
  incrementalDelivery?: boolean;
  /**
   * Bounds on executing one operation. Every execution also stops when its client leaves (the
   * request's `signal`): graphql-js 17 stops resolving fields (resolvers see `info.getAbortSignal()`),
   * @defer/@stream work stops on either graphql version. `timeoutMs`: see ExecutionOptions.
   */
  execution?: ExecutionOptions;
  /** Maps every reported error (GraphQL or request error) before it is serialized. */
  formatError?: FormatError;
  /**
   * The status codes of GraphQL responses. `'compatible'`: 200 under application/json, 400 for a
   * response without data under application/graphql-response+json (what graphql-http's audits and
   * today's clients expect). `'draft-2026'`: the GraphQL-over-HTTP draft as rewritten in 2026, for
   * every media type: 400 when the JSON or the document does not parse, 422 when the request was read
   * but cannot run (validation, operation selection, variables, malformed parameters), 294 for data
   * with errors; a response that is not 2xx comes as application/graphql-response+json.
   * Default `'compatible'`. Details: docs/graphql/endpoint.md.
   */
  httpStatusCodes?: HttpStatusCodes;
  /**
   * Batched requests: a POST whose JSON body is an array of operations, answered with an array of
   * their results in the same order, one operation after another. `true` allows up to 10 per request
   * (Yoga's default), `{ limit }` another bound; more is 413. Default off: an array body is a request
   * error saying batching is not accepted.
   */
  batching?: BatchingOptions | boolean;
  /**
   * Called with unexpected failures (a throwing context factory, a bug); the client gets a bare 500
   * without details. Default: `console.error`.
   */
  onInternalError?: (error: unknown, request: Request) => void;
  /** Observes every answered request (access logs, metrics); called before the response is returned. */
  onResponse?: (event: ResponseEvent) => void;

  // Production features (docs/graphql/production.md); each module documents its own options.
  /** Development mode: unexpected resolver errors reach the client as they are. Default false. */
  development?: boolean;
  /** Replace unexpected resolver errors with "Unexpected error." (path and locations kept). Default `!development`. */
  maskErrors?: boolean;
  /** Receives every error masked from a client. Default `console.error`. */
  onMaskedError?: (error: GraphQLError) => void;
  /** Answer `__schema` and `__type`. Default true. */
  introspection?: boolean;
  /** Bounds on query length, tokens, depth, aliases and list sizes; false lifts them all. Defaults in limits.ts. */
  limits?: LimitOptions | false;
  /** A strong ETag on successful GET responses and 304 for a matching If-None-Match. Default true. */
  etag?: boolean;
  /** Cache-Control on successful GET responses. Default `public, max-age=60` for a schema without mutations, else none. */
  cacheControl?: CacheControlOptions | false;
  /** Automatic persisted queries (Apollo's protocol). Default on, in-memory store of 1000 queries. */
  persistedQueries?: PersistedQueriesOptions | false;
  /**
   * Trusted documents: the operations of a manifest (Apollo's persisted query manifest or Relay's
   * persisted_queries.json, as an object) run by id, sent as `documentId` or
   * `extensions.persistedQuery.sha256Hash`; with `freeform: 'refused'` (the default outside
   * `development`) nothing else runs. Default off. docs/graphql/production.md#trusted-documents.
   */
  trustedDocuments?: TrustedDocumentsOptions;
  /** Reuse successful results of a read-only schema. Default off. */
  responseCache?: ResponseCacheOptions | false;
  /** CORS for other origins. Default: none, no CORS headers at all. */
  cors?: CorsOptions;
  /** `GET /healthz` (liveness) and `GET /readyz` (readiness) answered by the handler; paths configurable. Default off. */
  health?: HealthOptions | boolean;
  /**
   * An OpenTelemetry tracer (`trace.getTracer('my-service')` from @opentelemetry/api): one server span
   * per request, named after the operation type as OpenTelemetry's GraphQL conventions say, with
   * parse, validate and execute as child spans. Default off.
   */
  tracer?: Tracer;
  /** How spans are named and how much of the document they record (with `tracer`). */
  tracing?: TracingOptions;
}

/** What `onResponse` is told about one request. */
export interface ResponseEvent {
  request: Request;
  response: Response;
  /** The operation's name: the `operationName` parameter, else the name in the document; null if none. */
  operationName: string | null;
  /** The operation's type; null when the request carried no operation that parses (404, 400, 405...). */
  operationType: 'query' | 'mutation' | 'subscription' | null;
  /**
   * Whether the query's document was in the document cache when the request arrived; null without a
   * query, or with the cache off.
   */
  documentCacheHit: boolean | null;
}

export const defaults = {
  path: '/graphql',
  maxBodyBytes: 1024 * 1024,
  documentCacheSize: 1000,
  httpStatusCodes: 'compatible',
} as const;
