import { assertValidSchema } from 'graphql';
import { createDocumentCache } from './document-cache.ts';
import { createHealthChecks } from './health.ts';
import { endRequestSpan, failRequestSpan, startRequestSpan, type RequestTrace } from './tracing.ts';
import { parseOptionsFor, resolveLimits } from './limits.ts';
import { acceptableMediaTypes, applicationJson, negotiateMediaType, type GraphQLMediaType } from './negotiation.ts';
import { onDemand } from './on-demand.ts';
import { createOperationRunner } from './operation.ts';
import { defaults, type GraphQLFetchHandler, type GraphQLHandlerOptions, type OperationContext, type RequestParams } from './options.ts';
import { pathnameOf } from './path.ts';
import { createProductionFeatures, newRequestState, type RequestState } from './production.ts';
import { bodyRead, readBodyThen } from './request-body.ts';
import { bodyReadError, paramsFromBody, paramsFromGet, paramsFromItem, postRefusal } from './request-params.ts';
import { answerBatch, Batch, batchLimitOf } from './batching.ts';
import { errorsJson, refusal, resultJson, thrownAnswer, type Answer } from './responses.ts';
import { httpStatusCodeModes, withDraftStatus } from './status-codes.ts';
import { withIncrementalDirectives } from '../streams/incremental-directives.ts';
import { resolveTimeout } from '../execution/execution-bounds.ts';
import { resolveStreamLimits } from '../streams/stream-options.ts';
import { negotiateStreamFormat, singleResultAnswer } from '../streams/stream-formats.ts';

/**
 * A GraphQL-over-HTTP endpoint as a fetch handler, for any runtime with web-standard Request and
 * Response. GET (queries only) and POST with a JSON body; the response media type is negotiated
 * between application/graphql-response+json and application/json, with the spec's status codes.
 *
 * Every request takes one way: route (path, CORS preflight, media type), parse its parameters,
 * admit them (limits, response cache), run the operation (operation.ts), respond (production.ts).
 * Each step hands the next what it found; whatever needs no waiting is answered synchronously.
 */
export function createGraphQLHandler<Context extends OperationContext = undefined>(options: GraphQLHandlerOptions<Context>): GraphQLFetchHandler {
  // With incremental delivery the schema defines @defer and @stream, so documents using them validate.
  const schema = options.incrementalDelivery === true ? withIncrementalDirectives(options.schema) : options.schema;
  assertValidSchema(schema);
  const path = options.path === undefined ? defaults.path : options.path;
  if (path !== null && !path.startsWith('/')) {
    throw new TypeError(`createGraphQLHandler: path must start with "/" (got "${path}") or be null for any path`);
  }
  const maxBodyBytes = positiveInteger('maxBodyBytes', options.maxBodyBytes ?? defaults.maxBodyBytes);
  const documentCacheSize = options.documentCacheSize ?? defaults.documentCacheSize;
  if (!Number.isInteger(documentCacheSize) || documentCacheSize < 0) {
    throw new TypeError(`createGraphQLHandler: documentCacheSize must be a non-negative integer (got ${documentCacheSize})`);
  }
  const statusCodes = options.httpStatusCodes ?? defaults.httpStatusCodes;
  if (!httpStatusCodeModes.includes(statusCodes)) {
    throw new TypeError(`createGraphQLHandler: httpStatusCodes must be one of ${httpStatusCodeModes.join(', ')} (got ${JSON.stringify(statusCodes)})`);
  }
  const draftStatuses = statusCodes === 'draft-2026';
  const batchLimit = batchLimitOf(options.batching);
  const onInternalError = options.onInternalError ?? ((error: unknown) => console.error('GraphQL handler failed:', error));

  const limits = resolveLimits(options.limits);
  const documents = createDocumentCache(documentCacheSize, parseOptionsFor(limits));
  // Caching, persisted queries, limits, masking, CORS, the response observer: see production.ts.
  const features = createProductionFeatures(options as GraphQLHandlerOptions<never>, schema, limits, documents);
  const { formatError, queryResolver } = features;
  const streamOptions = options.subscriptions || {};
  const streamLimits = resolveStreamLimits(streamOptions);
  // The parts below are loaded by the first request that needs them (on-demand.ts).
  const incremental =
    options.incrementalDelivery === true
      ? onDemand(() =>
          import('../streams/incremental-delivery.ts').then(({ createIncrementalDelivery }) =>
            createIncrementalDelivery({ formatErrors: (errors) => errors.map(formatError), ...streamLimits }),
          ),
        )
      : null;
  // Subscriptions over SSE and multipart, for a schema that has them.
  const streams =
    options.subscriptions === false || !schema.getSubscriptionType()
      ? null
      : onDemand(() =>
          import('../streams/http-subscriptions.ts').then(({ createHttpSubscriptions }) =>
            createHttpSubscriptions({
              options: streamOptions,
              limits: streamLimits,
              hasContext: options.context !== undefined,
              // Events of a subscription that uses @defer come as incremental payloads (the delivery is loaded by then).
              serialize: (result) => {
                const delivery = incremental?.value;
                return delivery !== undefined && 'incremental' in result ? delivery.serialize(result) : resultJson(result, formatError);
              },
              serializeErrors: (errors) => errorsJson(errors, formatError),
              subscribe: options.subscribe,
            }),
          ),
        );
  const compiled =
    options.compiledExecution === true && options.execute === undefined && documentCacheSize > 0
      ? onDemand(() => import('../execution/compiled-execution.ts').then(({ createCompiledExecution }) => createCompiledExecution(schema)))
      : null;
  const runOperation = createOperationRunner({
    schema,
    documents,
    validationRules: [...features.validationRules, ...(options.validationRules ?? [])],
    rootValue: options.rootValue,
    context: options.context,
    execute: options.execute,
    timeoutMs: resolveTimeout(options.execution),
    // With `compiledExecution`, valid queries run on a compiled plan (src/execution); a custom
    // `execute` opts out, and so does a disabled document cache (plans live with cached documents).
    compiled,
    formatError,
    streams,
    incremental,
    onLoadError: (error) => console.error('GraphQL handler: compiled execution could not be loaded, so graphql-js runs every query:', error),
  });

  const health = createHealthChecks(options.health);
  const tracer = options.tracer;

  /** With a tracer: the request inside its span, ended with the response. */
  function traced(request: Request, body?: string): Response | Promise<Response> {
    const t = startRequestSpan(tracer!, request, pathnameOf(request.url), options.tracing);
    let response: Response | Promise<Response>;
    try {
      response = handle(request, body, t);
    } catch (error) {
      failRequestSpan(t, error);
      throw error;
    }
    if (!(response instanceof Promise)) {
      endRequestSpan(t, response);
      return response;
    }
    return response.then(
      (settled) => {
        endRequestSpan(t, settled);
        return settled;
      },
      (error: unknown) => {
        failRequestSpan(t, error);
        throw error;
      },
    );
  }

  /** Answers synchronously whenever nothing has to be waited for (see GraphQLFetchHandler.fetch). */
  function handle(request: Request, body: string | undefined, trace?: RequestTrace): Response | Promise<Response> {
    if (path !== null || health !== null) {
      const requested = pathnameOf(request.url);
      const probe = health?.(request, requested) ?? null;
      if (probe !== null) return probe;
      if (path !== null && requested !== path) return features.finish(request, refusal(404, `Nothing at ${requested}: the GraphQL endpoint is ${path}`));
    }
    const preflight = features.preflight(request);
    if (preflight !== null) return preflight;
    const accept = request.headers.get('accept');
    const negotiated = negotiateMediaType(accept);
    const streamFormat = negotiateStreamFormat(accept);
    if (negotiated === null && streamFormat === null) {
      return features.finish(request, {
        status: 406,
        headers: { accept: acceptableMediaTypes, 'content-type': 'text/plain; charset=utf-8' },
        body: `Not Acceptable: accept ${acceptableMediaTypes}`,
      });
    }
    // A client that accepts only a stream (graphql-sse) gets every answer as one; errors are formatted as under application/json.
    const mediaType = negotiated ?? applicationJson;
    const state = newRequestState(streamFormat === null ? null : { format: streamFormat, only: negotiated === null });
    if (trace !== undefined) state.trace = trace;
    if (request.method === 'GET') return answer(request, state, mediaType, () => paramsFromGet(request, queryResolver));
    const refused = postRefusal(request);
    if (refused !== null) return respond(request, state, refused);
    if (body !== undefined) return answer(request, state, mediaType, () => paramsFromBody(bodyRead(body, maxBodyBytes), request, queryResolver, batchLimit));
    // The continuation hangs straight off the body's promise: nothing in between on the hot path.
    return readBodyThen(
      request,
      maxBodyBytes,
      (read) => answer(request, state, mediaType, () => paramsFromBody(read, request, queryResolver, batchLimit)),
      (error) => respond(request, state, thrownAnswer(bodyReadError(error), mediaType, formatError)),
    );
  }

  /** The whole way from the parameters `parse` finds to the response; never throws. */
  function answer(
    request: Request,
    state: RequestState,
    mediaType: GraphQLMediaType,
    parse: () => RequestParams | Answer | Promise<RequestParams> | Batch,
  ): Response | Promise<Response> {
    let answered: Answer | Promise<Answer>;
    try {
      answered = parsed(request, state, mediaType, parse);
    } catch (error) {
      return internalError(request, error, state);
    }
    if (!(answered instanceof Promise)) return respond(request, state, answered);
    return answered.then(
      (settled) => respond(request, state, settled),
      (error) => internalError(request, error, state),
    );
  }

  /** The parameters `parse` finds, admitted and run; a request error where they cannot be read. */
  function parsed(
    request: Request,
    state: RequestState,
    mediaType: GraphQLMediaType,
    parse: () => RequestParams | Answer | Promise<RequestParams> | Batch,
  ): Answer | Promise<Answer> {
    let params: RequestParams | Answer | Promise<RequestParams> | Batch;
    try {
      params = parse();
    } catch (error) {
      return thrownAnswer(error, mediaType, formatError);
    }
    if (params instanceof Batch) return batched(request, state, mediaType, params);
    if (params instanceof Promise) {
      return params.then(
        (settled) => admitted(request, state, mediaType, settled),
        (error) => thrownAnswer(error, mediaType, formatError),
      );
    }
    return isAnswer(params) ? params : admitted(request, state, mediaType, params);
  }

  /** Each operation of a batch as a request of its own would go, answered in one JSON array. */
  function batched(request: Request, state: RequestState, mediaType: GraphQLMediaType, batch: Batch): Answer | Promise<Answer> {
    if (state.stream?.only) return refusal(406, 'A batch is answered as JSON: accept application/json or application/graphql-response+json');
    return answerBatch(batch, mediaType, (item) => parsed(request, newRequestState(null), mediaType, () => paramsFromItem(item, request, queryResolver)));
  }

  function admitted(request: Request, state: RequestState, mediaType: GraphQLMediaType, params: RequestParams): Answer | Promise<Answer> {
    let admission: RequestParams | Answer;
    try {
      admission = features.admit(params, state, mediaType);
    } catch (error) {
      return thrownAnswer(error, mediaType, formatError);
    }
    return isAnswer(admission) ? admission : runOperation(request, admission, mediaType, state.trace, state.stream);
  }

  function respond(request: Request, state: RequestState, answered: Answer): Response {
    try {
      const answer = state.stream?.only ? singleResultAnswer(answered, state.stream.format) : draftStatuses ? withDraftStatus(answered) : answered;
      return features.respond(request, state, answer);
    } catch (error) {
      return internalError(request, error, state);
    }
  }

  function internalError(request: Request, error: unknown, state: RequestState): Response {
    onInternalError(error, request);
    return features.finish(request, refusal(500, 'Internal server error'), state);
  }

  const entry = tracer === undefined ? (request: Request, body?: string) => handle(request, body) : traced;
  const handleGraphQL = (request: Request): Promise<Response> => {
    try {
      return Promise.resolve(entry(request));
    } catch (error) {
      return Promise.reject(error);
    }
  };
  const subscriptionStats = () => streams?.value?.stats() ?? { executions: 0, members: 0, open: 0 };
  const closeStreams = () => streams?.value?.closeAll();
  return Object.assign(handleGraphQL, { fetch: entry, subscriptionStats, closeStreams, httpSubscriptions: streams !== null });
}

/** An answer already (a refusal, a cached response) rather than parameters to go on with. */
function isAnswer(value: RequestParams | Answer): value is Answer {
  return typeof (value as Answer).status === 'number';
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new TypeError(`createGraphQLHandler: ${name} must be a positive integer (got ${value})`);
  }
  return value;
}
