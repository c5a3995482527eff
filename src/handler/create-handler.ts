import { assertValidSchema, execute as graphqlExecute } from 'graphql';
import { createHandler, type OperationContext } from 'graphql-http';
import { createDocumentCache } from './document-cache.ts';
import { createFastPath, withFastPath } from '../execution/fast-path.ts';
import { defaults, type GraphQLFetchHandler, type GraphQLHandlerOptions } from './options.ts';
import { acceptableMediaTypes, negotiateMediaType } from './negotiation.ts';
import { pathnameOf } from './path.ts';
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

  const documents = createDocumentCache(documentCacheSize);
  const { context } = options;
  const parseRequestParams = createRequestParamsParser(maxBodyBytes);
  // Cached, valid queries skip graphql-http's per-request work and run on a compiled plan
  // (src/execution). A custom `execute` opts out: graphql-http then runs every operation.
  const fastPath =
    options.execute === undefined && documentCacheSize > 0
      ? createFastPath({
          schema,
          documents,
          validationRules: options.validationRules ?? [],
          rootValue: options.rootValue,
          context,
          formatError: options.formatError,
        })
      : null;
  const core = createHandler<Request, undefined, Context>({
    schema,
    rootValue: options.rootValue,
    context:
      typeof context === 'function'
        ? (req, params) => (context as (r: Request, p: typeof params) => Context | Promise<Context>)(req.raw, params)
        : context,
    validationRules: options.validationRules ?? [],
    parse: documents.parse,
    validate: documents.validate,
    execute: (options.execute ?? graphqlExecute) as typeof graphqlExecute,
    formatError: options.formatError,
    parseRequestParams: fastPath ? withFastPath(parseRequestParams, fastPath) : parseRequestParams,
  });

  return async function handleGraphQL(request: Request): Promise<Response> {
    if (path !== null) {
      const requested = pathnameOf(request.url);
      if (requested !== path) return errorResponse(404, `Nothing at ${requested}: the GraphQL endpoint is ${path}`);
    }
    const mediaType = negotiateMediaType(request.headers.get('accept'));
    if (mediaType === null) {
      return new Response(`Not Acceptable: accept ${acceptableMediaTypes}`, {
        status: 406,
        headers: { accept: acceptableMediaTypes, 'content-type': 'text/plain; charset=utf-8' },
      });
    }
    try {
      const [body, init] = await core({
        method: request.method,
        url: request.url,
        // graphql-http ignores q-values; it is handed the already negotiated type instead.
        headers: { get: (name: string) => (name === 'accept' ? mediaType : request.headers.get(name)) },
        body: null, // the request parser reads it from `raw`, under the size limit
        raw: request,
        context: undefined,
      });
      return new Response(body, init);
    } catch (error) {
      onInternalError(error, request);
      return errorResponse(500, 'Internal server error');
    }
  };
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new TypeError(`createGraphQLHandler: ${name} must be a positive integer (got ${value})`);
  }
  return value;
}
