import { assertValidSchema, execute as graphqlExecute } from 'graphql';
import { createHandler, type OperationContext } from 'graphql-http';
import { createDocumentCache } from './document-cache.ts';
import { createFastPath, type FastPath } from '../execution/fast-path.ts';
import { defaults, type GraphQLFetchHandler, type GraphQLHandlerOptions } from './options.ts';
import { acceptableMediaTypes, negotiateMediaType } from './negotiation.ts';
import { pathnameOf } from './path.ts';
import { createProductionFeatures, newRequestState, type RequestState } from './production.ts';
import { bodyReadError, createRequestParamsParser, paramsFromBody, paramsFromGet, postRefusal, type ParsedParams } from './request-params.ts';
import { readBodyThen } from './request-body.ts';
import type { RequestParams, Response as HttpResult } from 'graphql-http';
import { errorResponse } from './responses.ts';

/**
 * A GraphQL-over-HTTP endpoint as a fetch handler, for any runtime with web-standard Request and
 * Response. GET (queries only) and POST with a JSON body; the response media type is negotiated
 * between application/graphql-response+json and application/json, with the spec's status codes.
 *
 * graphql-http supplies the protocol decisions (status codes, error shapes); this module adds what
 * sits around them: the path, content negotiation with q-values, the body limit, the document cache
 * and the web Response.
 */
export function createGraphQLHandler<Context extends OperationContext = undefined>(
  options: GraphQLHandlerOptions<Context>,
): GraphQLFetchHandler {
  const { schema } = options;
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
  const onInternalError = options.onInternalError ?? ((error: unknown) => console.error('GraphQL handler failed:', error));

  // Caching, persisted queries, limits, masking, CORS, the response observer: see production.ts.
  const features = createProductionFeatures(options as GraphQLHandlerOptions<never>, schema);
  const documents = createDocumentCache(documentCacheSize, features.parseOptions);
  const validationRules = [...features.validationRules, ...(options.validationRules ?? [])];
  const { context } = options;
  const parseRequestParams = features.wrapParamsParser(
    createRequestParamsParser<RequestState>(maxBodyBytes, features.queryResolver),
    documents,
  );
  // With `compiledExecution`, cached valid queries skip graphql-http's per-request work and run on
  // a compiled plan (src/execution). A custom `execute` opts out: graphql-http then runs every operation.
  const fastPath =
    options.compiledExecution === true && options.execute === undefined && documentCacheSize > 0
      ? createFastPath({
          schema,
          documents,
          validationRules,
          rootValue: options.rootValue,
          context,
          formatError: features.formatError,
        })
      : null;
  const core = createHandler<Request, RequestState, Context>({
    schema,
    rootValue: options.rootValue,
    context:
      typeof context === 'function'
        ? (req, params) => (context as (r: Request, p: typeof params) => Context | Promise<Context>)(req.raw, params)
        : context,
    validationRules,
    parse: documents.parse,
    validate: documents.validate,
    execute: (options.execute ?? graphqlExecute) as typeof graphqlExecute,
    formatError: features.formatError,
    // What reaches graphql-http has been through the fast path already (see `shortcut`): not again.
    parseRequestParams,
  });

  /** Answers synchronously whenever nothing has to be waited for (see GraphQLFetchHandler.fetch). */
  function handle(request: Request): Response | Promise<Response> {
    if (path !== null) {
      const requested = pathnameOf(request.url);
      if (requested !== path) {
        return features.finish(request, errorResponse(404, `Nothing at ${requested}: the GraphQL endpoint is ${path}`));
      }
    }
    const preflight = features.preflight(request);
    if (preflight !== null) return preflight;
    const mediaType = negotiateMediaType(request.headers.get('accept'));
    if (mediaType === null) {
      const notAcceptable = new Response(`Not Acceptable: accept ${acceptableMediaTypes}`, {
        status: 406,
        headers: { accept: acceptableMediaTypes, 'content-type': 'text/plain; charset=utf-8' },
      });
      return features.finish(request, notAcceptable);
    }
    if (fastPath === null) return fullPath(request, mediaType, undefined);
    // Cached valid queries are answered by the shortcut without graphql-http's promise hops (a GET
    // without any). Whatever it does not answer (errors, refusals, async context or persisted-query
    // stores that end up unanswered) goes the full way with the parameters already parsed, and is
    // decided there exactly as before.
    if (request.method === 'GET') return shortcut(request, mediaType, parseGet(request), fastPath);
    return shortcutPost(request, mediaType, fastPath) ?? fullPath(request, mediaType, undefined);
  }

  function shortcut(request: Request, mediaType: string, parsed: ParsedParams, fast: FastPath): Response | Promise<Response> {
    const state = newRequestState();
    let quick: ReturnType<typeof quickAnswer>;
    try {
      quick = quickAnswer(request, parsed, mediaType, state, fast);
    } catch (error) {
      return internalError(request, error, state);
    }
    if (quick === undefined) return fullPath(request, mediaType, parsed);
    if (!(quick instanceof Promise)) return quick;
    return quick.then(
      (response) => response ?? fullPath(request, mediaType, parsed),
      (error) => internalError(request, error, state),
    );
  }

  /** graphql-http decides: everything the shortcut does not answer, and every request without it. */
  async function fullPath(request: Request, mediaType: string, parsed: ParsedParams | undefined): Promise<Response> {
    const state = newRequestState();
    if (parsed !== undefined) state.parsed = parsed;
    try {
      const [body, init] = await core({
        method: request.method,
        url: request.url,
        // graphql-http ignores q-values; it is handed the already negotiated type instead.
        headers: { get: (name: string) => (name === 'accept' ? mediaType : request.headers.get(name)) },
        body: null, // the request parser reads it from `raw`, under the size limit
        raw: request,
        context: state,
      });
      // HTTP caching headers, 304, CORS headers and the observer, on whatever path answered.
      return features.respond(request, state, body, init as { status: number; headers?: Record<string, string> });
    } catch (error) {
      return internalError(request, error, state);
    }
  }

  function internalError(request: Request, error: unknown, state: RequestState): Response {
    onInternalError(error, request);
    return features.finish(request, errorResponse(500, 'Internal server error'), state);
  }

  const handleGraphQL = (request: Request): Promise<Response> => {
    try {
      return Promise.resolve(handle(request));
    } catch (error) {
      return Promise.reject(error);
    }
  };
  return Object.assign(handleGraphQL, { fetch: handle });

  /** A GET's parameters, as a replayable outcome. */
  function parseGet(request: Request): ParsedParams {
    return replayable(() => paramsFromGet(request.url, features.queryResolver));
  }

  /** A JSON POST through the shortcut once its body is read (undefined for anything else: 405, 415). */
  function shortcutPost(request: Request, mediaType: string, fast: FastPath): Promise<Response> | undefined {
    if (postRefusal(request) !== null) return undefined;
    return readBodyThen(
      request,
      maxBodyBytes,
      (read) => shortcut(request, mediaType, replayable(() => paramsFromBody(read, features.queryResolver)), fast),
      (error) =>
        shortcut(
          request,
          mediaType,
          replayable(() => {
            throw bodyReadError(error);
          }),
          fast,
        ),
    );
  }

  /**
   * The parameters through the production features and the fast path, as the full path takes them;
   * undefined when the full path has to decide.
   */
  function quickAnswer(
    request: Request,
    parsed: ParsedParams,
    mediaType: string,
    state: RequestState,
    fast: FastPath,
  ): Response | undefined | Promise<Response | undefined> {
    let params: ReturnType<ParsedParams>;
    try {
      params = parsed();
    } catch {
      return undefined;
    }
    if (params instanceof Promise) {
      return params.then(
        (settled) => (isReady(settled) ? undefined : quickAnswer(request, () => settled, mediaType, state, fast)),
        () => undefined,
      );
    }
    if (isReady(params)) return undefined;
    let admitted;
    try {
      admitted = features.admit(params, state, mediaType);
    } catch {
      return undefined;
    }
    let result: HttpResult | Promise<HttpResult> | undefined;
    if (isReady(admitted)) result = admitted;
    else {
      // graphql-http would report anything thrown here as a 400; a failure (a throwing context
      // factory, say) is left to happen again on the full path, which makes it a 500.
      try {
        result = fast(request, params, mediaType);
      } catch {
        return undefined;
      }
    }
    if (result === undefined) return undefined;
    if (result instanceof Promise) {
      return result.then(
        (settled) => (settled === undefined ? undefined : respond(request, state, settled)),
        () => undefined,
      );
    }
    return respond(request, state, result);
  }

  function respond(request: Request, state: RequestState, [body, init]: HttpResult): Response {
    return features.respond(request, state, body, init as { status: number; headers?: Record<string, string> });
  }
}

/** Runs `parse` once; the outcome replays as often as asked: the same value, or the same error thrown. */
function replayable(parse: () => ReturnType<ParsedParams>): ParsedParams {
  let params: ReturnType<ParsedParams>;
  try {
    params = parse();
  } catch (error) {
    return () => {
      throw error;
    };
  }
  return () => params;
}

/** A ready response (graphql-http's [body, init]) rather than request parameters. */
function isReady(value: RequestParams | HttpResult): value is HttpResult {
  return Array.isArray(value);
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new TypeError(`createGraphQLHandler: ${name} must be a positive integer (got ${value})`);
  }
  return value;
}
