import { assertValidSchema, execute as graphqlExecute } from 'graphql';
import { createHandler, type OperationContext } from 'graphql-http';
import { createDocumentCache } from './document-cache.ts';
import { createFastPath, withFastPath } from '../execution/fast-path.ts';
import { defaults, type GraphQLFetchHandler, type GraphQLHandlerOptions } from './options.ts';
import { acceptableMediaTypes, negotiateMediaType } from './negotiation.ts';
import { pathnameOf } from './path.ts';
import { createProductionFeatures, newRequestState, type RequestState } from './production.ts';
import { createRequestParamsParser } from './request-params.ts';
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
    parseRequestParams: fastPath ? withFastPath(parseRequestParams, fastPath) : parseRequestParams,
  });

  return async function handleGraphQL(request: Request): Promise<Response> {
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
    const state = newRequestState();
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
      onInternalError(error, request);
      return features.finish(request, errorResponse(500, 'Internal server error'), state);
    }
  };
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new TypeError(`createGraphQLHandler: ${name} must be a positive integer (got ${value})`);
  }
  return value;
}
