import type { RequestTrace } from './tracing.ts';
import type { StreamRequest } from './operation.ts';
import { getOperationAST, NoSchemaIntrospectionCustomRule, type GraphQLSchema, type ValidationRule } from 'graphql';
import { cacheControlValue } from './cache-control.ts';
import { createCors, type Cors } from './cors.ts';
import type { DocumentCache } from './document-cache.ts';
import { etagOf, ifNoneMatchHits } from './etag.ts';
import { checkRequestLimits, limitValidationRules, restateTokenLimit, type ResolvedLimits } from './limits.ts';
import { createFormatError } from './masking.ts';
import { hidingSuggestions } from './suggestions.ts';
import type { GraphQLMediaType } from './negotiation.ts';
import type { FormatError, GraphQLHandlerOptions, RequestParams, ResponseEvent } from './options.ts';
import { createPersistedQueryResolver, type QueryResolver } from './persisted-queries.ts';
import { createTrustedDocumentResolver } from './trusted-documents.ts';
import { createResponseCache, type CachedResponse, type ResponseCache } from './response-cache.ts';
import { cachedAnswer, type Answer } from './responses.ts';

/** What one request learns on its way through the handler, for the HTTP layer to act on. */
export interface RequestState {
  /** The operationName parameter (the document's own name is looked up only for `onResponse`). */
  operationName: string | null | undefined;
  /** The query text, once the parameters are known. */
  query: string | undefined;
  /** Where a successful response goes in the response cache. */
  cacheKey: string | undefined;
  /** The cached response this request is answered with. */
  cached: CachedResponse | undefined;
  /** The request's span, when the handler has a tracer. */
  trace?: RequestTrace;
  /** Whether the query was in the document cache on arrival; only looked up for `onResponse`. */
  documentCached?: boolean;
  /** The stream the client accepts (SSE, multipart), when it named one. */
  stream: StreamRequest | null;
}

export function newRequestState(stream: StreamRequest | null): RequestState {
  return { operationName: undefined, query: undefined, cacheKey: undefined, cached: undefined, stream };
}

/**
 * The production features around the GraphQL pipeline: HTTP caching (ETag, 304,
 * Cache-Control), automatic persisted queries, the response cache, limits, the introspection
 * switch, error masking, CORS and the response observer. Built once per handler.
 *
 * They sit where every request passes: the request parameters on the way in (`admit`), the
 * validation rules and formatError in between, and the finished answer on the way out (`respond`).
 * An answer counts as successful when it is a 200 whose body starts with `{"data"`: every
 * serializer puts `errors` first when there are any.
 */
export interface ProductionFeatures {
  /** Limit and introspection rules, to run after graphql-js's specified rules. */
  validationRules: readonly ValidationRule[];
  /** Resolves persisted queries; give it to the request-parameter parser. */
  queryResolver: QueryResolver;
  formatError: FormatError;
  /**
   * Request limits, state and response-cache hits for parsed parameters: the parameters to go on
   * with, or the cached answer. Throws what the handler reports as a request error (a limit).
   */
  admit(params: RequestParams, state: RequestState, mediaType: GraphQLMediaType): RequestParams | Answer;
  /** Answers a CORS preflight, or null. */
  preflight(request: Request): Response | null;
  /** The response to an answer about a GraphQL request: HTTP caching and CORS headers, observer. */
  respond(request: Request, state: RequestState, answer: Answer): Response;
  /** The response to an answer about no GraphQL request at all (404, 406, 500): CORS headers, observer. */
  finish(request: Request, answer: Answer, state?: RequestState): Response;
}

/**
 * `limits` are the handler's, resolved; `documentsForNames` parses queries for the response cache's
 * keys and `onResponse`'s operation names (the handler's own document cache, so a query is parsed once).
 */
export function createProductionFeatures(
  options: GraphQLHandlerOptions<never>,
  schema: GraphQLSchema,
  limits: ResolvedLimits,
  documentsForNames: DocumentCache,
): ProductionFeatures {
  const rules: ValidationRule[] = limitValidationRules(limits);
  if (options.introspection === false) rules.push(NoSchemaIntrospectionCustomRule);

  const mask = options.maskErrors ?? !options.development;
  const onMasked =
    options.onMaskedError ?? ((error) => console.error('GraphQL resolver error (shown to the client as "Unexpected error."):', error.originalError ?? error));
  const masking = createFormatError(mask, onMasked, options.formatError);
  const { maxTokens } = limits;
  const masked: FormatError = masking ?? ((error) => error);
  // With introspection off, no error names what the schema has ("Did you mean …?").
  const shown = options.introspection === false ? hidingSuggestions(masked) : masked;
  const formatError: FormatError = maxTokens === Infinity ? shown : (error) => shown(restateTokenLimit(error, maxTokens));

  let responseCache: ResponseCache | undefined;
  if (options.responseCache) {
    if (schema.getMutationType()) {
      throw new TypeError('createGraphQLHandler: responseCache is only for read-only schemas, and this schema has a mutation type');
    }
    responseCache = createResponseCache(options.responseCache);
  }

  const useEtag = options.etag !== false;
  const cacheControl = cacheControlValue(schema, options.cacheControl);
  const httpCaching = useEtag || cacheControl !== null;
  const cors: Cors | undefined = options.cors ? createCors(options.cors) : undefined;
  const varyGet = cors ? 'Accept, Origin' : 'Accept';
  const onResponse = options.onResponse;
  const documentCacheOn = (options.documentCacheSize ?? 1) > 0;

  const observe = (request: Request, response: Response, state: RequestState | undefined): void => {
    if (!onResponse) return;
    let operationName = state?.operationName ?? null;
    let operationType: ResponseEvent['operationType'] = null;
    if (state?.query !== undefined) {
      try {
        const operation = getOperationAST(documentsForNames.parse(state.query), operationName);
        operationType = operation?.operation ?? null;
        if (operationName === null) operationName = operation?.name?.value ?? null;
      } catch {
        // a syntax error has no operation
      }
    }
    const event: ResponseEvent = { request, response, operationName, operationType, documentCacheHit: state?.documentCached ?? null };
    try {
      onResponse(event);
    } catch {
      // an observer must not change the answer
    }
  };

  function admit(params: RequestParams, state: RequestState, mediaType: GraphQLMediaType): RequestParams | Answer {
    const { query, variables, operationName } = params;
    checkRequestLimits(limits, query, variables);
    state.operationName = operationName;
    state.query = query;
    // Looked up before anything parses the query.
    if (onResponse !== undefined && documentCacheOn) state.documentCached = documentsForNames.has(query);
    if (responseCache !== undefined) {
      let document;
      try {
        document = documentsForNames.parse(query);
      } catch {
        return params; // the operation step reports the syntax error
      }
      const key = responseCache.keyOf(document, operationName, variables);
      const cached = responseCache.get(key);
      if (cached === undefined) state.cacheKey = key;
      else {
        state.cached = cached;
        return cachedAnswer(cached.body, mediaType);
      }
    }
    return params;
  }

  // Trusted documents come first: they decide what else (APQ, freeform text) runs.
  const automatic = createPersistedQueryResolver(options.persistedQueries, limits.maxQueryLength);
  const queryResolver = options.trustedDocuments ? createTrustedDocumentResolver(options.trustedDocuments, options.development === true, automatic) : automatic;

  return {
    validationRules: rules,
    queryResolver,
    formatError,

    admit,

    preflight(request) {
      if (!cors) return null;
      const response = cors.preflight(request);
      if (response) observe(request, response, undefined);
      return response;
    },

    respond(request, state, answer) {
      const { headers, body } = answer;
      let status = answer.status;
      const succeeded = status === 200 && typeof body === 'string' && body.startsWith('{"data"');
      let etag = state.cached?.etag;
      if (httpCaching && request.method === 'GET') {
        headers.vary = varyGet;
        if (succeeded) {
          if (cacheControl !== null) headers['cache-control'] = cacheControl;
          if (useEtag) {
            if (etag === undefined) {
              etag = etagOf(body as string);
              if (state.cached) state.cached.etag = etag;
            }
            headers.etag = etag;
            if (ifNoneMatchHits(request.headers.get('if-none-match'), etag)) {
              status = 304;
              delete headers['content-type'];
            }
          }
        } else if (cacheControl !== null) {
          // Errors, misses of persisted queries and the like must not be stored by a CDN.
          headers['cache-control'] = 'no-store';
        }
      } else if (cors) {
        headers.vary = 'Origin';
      }
      if (succeeded && state.cacheKey !== undefined) responseCache?.set(state.cacheKey, body as string, etag);
      if (cors) cors.apply(request, headers);
      const response = new Response(status === 304 ? null : body, { status, headers });
      answer.madeInto?.(response);
      observe(request, response, state);
      return response;
    },

    finish(request, answer, state) {
      const { headers } = answer;
      if (cors) {
        cors.apply(request, headers);
        headers.vary = 'Origin';
      }
      const response = new Response(answer.body, { status: answer.status, headers });
      observe(request, response, state);
      return response;
    },
  };
}
