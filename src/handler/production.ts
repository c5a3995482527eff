import {
  getOperationAST,
  NoSchemaIntrospectionCustomRule,
  type GraphQLSchema,
  type ParseOptions,
  type ValidationRule,
} from 'graphql';
import type { FormatError, ParseRequestParams, RequestParams, Response as HttpResult } from 'graphql-http';
import { cacheControlValue } from './cache-control.ts';
import { createCors, type Cors } from './cors.ts';
import type { DocumentCache } from './document-cache.ts';
import { etagOf, ifNoneMatchHits } from './etag.ts';
import { checkRequestLimits, limitValidationRules, resolveLimits, restateTokenLimit } from './limits.ts';
import { createFormatError } from './masking.ts';
import { applicationJson } from './negotiation.ts';
import type { GraphQLHandlerOptions, ResponseEvent } from './options.ts';
import { createPersistedQueryResolver, type QueryResolver } from './persisted-queries.ts';
import { createResponseCache, type CachedResponse, type ResponseCache } from './response-cache.ts';
import { jsonContentType } from './responses.ts';
import type { ParsedParams } from './request-params.ts';

/**
 * What one request learns on its way through the protocol core, for the HTTP layer to act on. The
 * core hands it to the request-parameter hooks as graphql-http's request `context`.
 */
export interface RequestState {
  /** The operationName parameter (the document's own name is looked up only for `onResponse`). */
  operationName: string | null | undefined;
  /** The query text, once the parameters are known. */
  query: string | undefined;
  /** Where a successful response goes in the response cache. */
  cacheKey: string | undefined;
  /** The cached response this request is answered with. */
  cached: CachedResponse | undefined;
  /** The parameters, when the handler's shortcut has parsed them already. */
  parsed?: ParsedParams;
  /** Whether the query was in the document cache on arrival; only looked up for `onResponse`. */
  documentCached?: boolean;
}

export function newRequestState(): RequestState {
  return { operationName: undefined, query: undefined, cacheKey: undefined, cached: undefined };
}

type Headers_ = Record<string, string>;
type ParamsParser = ParseRequestParams<Request, RequestState>;

/**
 * The production features around the GraphQL-over-HTTP core: HTTP caching (ETag, 304,
 * Cache-Control), automatic persisted queries, the response cache, limits, the introspection
 * switch, error masking, CORS and the response observer. Built once per handler.
 *
 * They sit where every way of executing passes (graphql-http's or src/execution's fast path): the
 * request parameters on the way in, the validation rules and formatError in between, and the
 * finished body on the way out. A response counts as successful when it is a 200 whose body starts
 * with `{"data"`: both serializers put `errors` first when there are any.
 */
export interface ProductionFeatures {
  parseOptions: ParseOptions | undefined;
  /** Limit and introspection rules, to run after graphql-js's specified rules. */
  validationRules: readonly ValidationRule[];
  /** Resolves persisted queries; give it to the request-parameter parser. */
  queryResolver: QueryResolver;
  formatError: FormatError | undefined;
  /**
   * Request limits, state and response-cache hits for parsed parameters: the parameters to go on
   * with, or the cached answer. Throws (a limit) what graphql-http reports as 400.
   */
  admit(params: RequestParams, state: RequestState, mediaType: string | null): RequestParams | HttpResult;
  /** `admit` around the request-parameter parser. */
  wrapParamsParser(parse: ParamsParser, documents: DocumentCache): ParamsParser;
  /** Answers a CORS preflight, or null. */
  preflight(request: Request): Response | null;
  /** Builds the response to a request the core answered. */
  respond(request: Request, state: RequestState, body: string | null, init: { status: number; headers?: Headers_ }): Response;
  /** Finishes a response the handler built itself (404, 406, 500): CORS headers, observer. */
  finish(request: Request, response: Response, state?: RequestState): Response;
}

export function createProductionFeatures(options: GraphQLHandlerOptions<never>, schema: GraphQLSchema): ProductionFeatures {
  const limits = resolveLimits(options.limits);
  const rules: ValidationRule[] = limitValidationRules(limits);
  if (options.introspection === false) rules.push(NoSchemaIntrospectionCustomRule);

  const mask = options.maskErrors ?? !options.development;
  const onMasked =
    options.onMaskedError ?? ((error) => console.error('GraphQL resolver error (shown to the client as "Unexpected error."):', error.originalError ?? error));
  const masking = createFormatError(mask, onMasked, options.formatError);
  const { maxTokens } = limits;
  const formatError: FormatError | undefined =
    maxTokens === Infinity
      ? masking
      : (error) => {
          const restated = restateTokenLimit(error, maxTokens);
          return masking ? masking(restated) : restated;
        };

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
  let documentsForNames: DocumentCache | undefined;
  const documentCacheOn = (options.documentCacheSize ?? 1) > 0;

  const observe = (request: Request, response: Response, state: RequestState | undefined): void => {
    if (!onResponse) return;
    let operationName = state?.operationName ?? null;
    let operationType: ResponseEvent['operationType'] = null;
    if (state?.query !== undefined && documentsForNames !== undefined) {
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

  function admit(params: RequestParams, state: RequestState, mediaType: string | null): RequestParams | HttpResult {
    const { query, variables, operationName } = params;
    checkRequestLimits(limits, query, variables);
    state.operationName = operationName;
    state.query = query;
    // Looked up before anything parses the query; a request the shortcut hands on to the full path
    // is admitted again there, by which time the shortcut may have cached its document.
    if (onResponse !== undefined && documentsForNames !== undefined && documentCacheOn) state.documentCached = documentsForNames.has(query);
    if (responseCache !== undefined && documentsForNames !== undefined) {
      let document;
      try {
        document = documentsForNames.parse(query);
      } catch {
        return params; // the core reports the syntax error
      }
      const key = responseCache.keyOf(document, operationName, variables);
      const cached = responseCache.get(key);
      if (cached === undefined) state.cacheKey = key;
      else {
        state.cached = cached;
        const contentType = mediaType === applicationJson || mediaType === null ? jsonContentType : `${mediaType}; charset=utf-8`;
        return [cached.body, { status: 200, statusText: 'OK', headers: { 'content-type': contentType } }];
      }
    }
    return params;
  }

  return {
    parseOptions: limits.maxTokens === Infinity ? undefined : { maxTokens: limits.maxTokens },
    validationRules: rules,
    queryResolver: createPersistedQueryResolver(options.persistedQueries, limits.maxQueryLength),
    formatError,

    admit,

    wrapParamsParser(parse, documents) {
      documentsForNames = documents;
      return async (req) => {
        const params = await parse(req);
        if (!params || Array.isArray(params)) return params; // a ready response (405, 413, 415)
        const mediaType = typeof req.headers.get === 'function' ? req.headers.get('accept') : null;
        return admit(params as RequestParams, req.context, mediaType);
      };
    },

    preflight(request) {
      if (!cors) return null;
      const response = cors.preflight(request);
      if (response) observe(request, response, undefined);
      return response;
    },

    respond(request, state, body, init) {
      const headers: Headers_ = init.headers ?? {};
      let status = init.status;
      const succeeded = status === 200 && body !== null && body.startsWith('{"data"');
      let etag = state.cached?.etag;
      if (httpCaching && request.method === 'GET') {
        headers.vary = varyGet;
        if (succeeded) {
          if (cacheControl !== null) headers['cache-control'] = cacheControl;
          if (useEtag) {
            if (etag === undefined) {
              etag = etagOf(body);
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
      if (succeeded && state.cacheKey !== undefined) responseCache?.set(state.cacheKey, body, etag);
      if (cors) cors.apply(request, headers);
      const response = new Response(status === 304 ? null : body, { status, headers });
      observe(request, response, state);
      return response;
    },

    finish(request, response, state) {
      if (cors) {
        const extra: Headers_ = {};
        cors.apply(request, extra);
        for (const name in extra) response.headers.set(name, extra[name]);
        response.headers.append('vary', 'Origin');
      }
      observe(request, response, state);
      return response;
    },
  };
}
