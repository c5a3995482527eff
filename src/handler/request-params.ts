// Turns a GET's search parameters or a POST's JSON body into GraphQL request parameters. Transport
// problems come back as a ready answer (405, 413, 415); JSON that does not parse is thrown as a plain
// Error and malformed parameters as a MalformedRequestError, which the handler reports as 400 (422
// under the 2026 draft's status codes) with the message in the `errors` list.
import type { BodyRead } from './request-body.ts';
import { applicationJson } from './negotiation.ts';
import { jsonContentType, refusal, type Answer } from './responses.ts';
import { searchOf } from './path.ts';
import { BoundedMemo } from './bounded-memo.ts';
import type { RequestParams } from './options.ts';
import type { QueryResolver } from './persisted-queries.ts';
import { MalformedRequestError } from './request-errors.ts';
import { Batch } from './batching.ts';

/** A GET's parameters from its URL (throws what the handler reports as 400). */
export function paramsFromGet(request: Request, resolveQuery: QueryResolver | undefined): RequestParams | Promise<RequestParams> {
  return fromSearch(searchOf(request.url), request, resolveQuery);
}

/** The ready answer to a request that is not a JSON POST (405, 415), or null for a JSON POST. */
export function postRefusal(request: Request): Answer | null {
  if (request.method !== 'POST') {
    return refusal(405, `Method ${request.method} is not allowed: use GET or POST`, { allow: 'GET, POST' });
  }
  const contentType = request.headers.get('content-type');
  if (isJsonContentType(contentType)) return null;
  return refusal(
    415,
    contentType === null
      ? 'Missing Content-Type header: POST a JSON body with "Content-Type: application/json"'
      : `Unsupported Content-Type "${contentType}": POST a JSON body with "Content-Type: application/json"`,
    { accept: applicationJson },
  );
}

/** What a failed body read is reported as (a request error: 400). */
export function bodyReadError(error: unknown): Error {
  return new Error(`Could not read the request body: ${(error as Error)?.message ?? String(error)}`);
}

/**
 * A POST's parameters from its body text, or the ready refusal (413, bad Content-Length); a Batch for
 * a JSON array when `batchLimit` (the most operations a batch may hold) is not 0.
 */
export function paramsFromBody(
  read: BodyRead,
  request: Request,
  resolveQuery: QueryResolver | undefined,
  batchLimit = 0,
): RequestParams | Answer | Promise<RequestParams> | Batch {
  if (!read.ok) return refusal(read.status, read.message);
  const text = read.text;
  const known = recentBodies.get(text);
  if (known !== undefined && known !== seenOnce) {
    return resolved(known, jsonCopy(known.variables), jsonCopy(known.extensions), request, resolveQuery);
  }
  if (text.trim() === '') throw new Error('Missing body: POST a JSON object such as {"query": "{ __typename }"}');
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new Error(`Unparsable JSON body: ${(error as Error).message}`);
  }
  if (Array.isArray(data)) return batchOf(data, batchLimit);
  if (!isObject(data)) throw new MalformedRequestError('JSON body must be an object such as {"query": "{ __typename }"}');
  const params = resolved(data, data.variables, data.extensions, request, resolveQuery);
  // Clients send the same bodies over and over. What is remembered is the body as sent (before any
  // persisted-query lookup), and its variables and extensions are handed out as copies, so whatever
  // a request's hooks do to theirs never reaches another request. Keeping a copy costs a third of a
  // parse, so a body with objects in it is kept once it comes a second time: unique ones (a form's
  // mutation) do not pay for it.
  if (!(params instanceof Promise)) {
    if (known !== seenOnce && (data.variables != null || data.extensions != null)) recentBodies.set(text, seenOnce);
    else {
      const variables = copyToKeep(data.variables);
      const extensions = copyToKeep(data.extensions);
      if (variables && extensions)
        recentBodies.set(text, {
          query: data.query,
          operationName: data.operationName,
          variables: variables.value,
          extensions: extensions.value,
          documentId: data.documentId,
        });
    }
  }
  return params;
}

function batchOf(items: unknown[], limit: number): Batch | Answer {
  if (limit === 0) {
    throw new MalformedRequestError('Batched requests (a JSON array) are not accepted here: send one operation per request, as a JSON object');
  }
  if (items.length === 0) throw new MalformedRequestError('An empty batch: send at least one operation in the array');
  if (items.length > limit) return refusal(413, `Batching is limited to ${limit} operations per request (got ${items.length})`);
  return new Batch(items);
}

/** One operation of a batch, checked as the body of a single request would be. */
export function paramsFromItem(item: unknown, request: Request, resolveQuery: QueryResolver | undefined): RequestParams | Promise<RequestParams> {
  if (!isObject(item)) throw new MalformedRequestError('Each operation of a batch must be an object such as {"query": "{ __typename }"}');
  return resolved(item, item.variables, item.extensions, request, resolveQuery);
}

/** A JSON body's GraphQL fields as sent. */
interface SentBody {
  query: unknown;
  operationName: unknown;
  variables: unknown;
  extensions: unknown;
  /** A persisted document's id (trusted documents), sent instead of `query`. */
  documentId: unknown;
}

/** What a memo holds for a body (or URL parameter) seen once, not kept yet. */
const seenOnce = Symbol('seen once');

const recentBodies = new BoundedMemo<SentBody | typeof seenOnce>(1 << 18);

/** A fresh copy of a value JSON.parse made (objects, arrays and primitives only). */
function jsonCopy<T>(value: T, depth = 0): T {
  if (typeof value !== 'object' || value === null) return value;
  // Only values that copyToKeep copied are copied again, so this bound is never met there.
  if (depth > maxCopyDepth) throw new RangeError(`JSON nested over ${maxCopyDepth} deep`);
  if (Array.isArray(value)) {
    const items = new Array(value.length);
    for (let i = 0; i < value.length; i++) items[i] = jsonCopy(value[i], depth + 1);
    return items as T;
  }
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const field = jsonCopy((value as Record<string, unknown>)[key], depth + 1);
    // JSON.parse makes "__proto__" an own property; assigning it would set the prototype instead.
    if (key === '__proto__') Object.defineProperty(copy, key, { value: field, writable: true, enumerable: true, configurable: true });
    else copy[key] = field;
  }
  return copy as T;
}

/** Deeper variables or extensions are parsed each time rather than kept (a copy walks them recursively). */
const maxCopyDepth = 64;

/** The copy a memo keeps, or undefined for a value too deep to keep. */
function copyToKeep(value: unknown): { value: unknown } | undefined {
  try {
    return { value: jsonCopy(value) };
  } catch {
    return undefined;
  }
}

function fromSearch(search: string, request: Request, resolveQuery: QueryResolver | undefined): RequestParams | Promise<RequestParams> {
  const found = searchParameters(search);
  if (found === null) {
    const params = new URLSearchParams(search);
    return resolved(
      { query: params.get('query') ?? undefined, operationName: params.get('operationName') ?? undefined, documentId: params.get('documentId') ?? undefined },
      jsonParameter(params.get('variables'), 'variables'),
      jsonParameter(params.get('extensions'), 'extensions'),
      request,
      resolveQuery,
    );
  }
  return resolved(found, jsonParameter(found.variables ?? null, 'variables'), jsonParameter(found.extensions ?? null, 'extensions'), request, resolveQuery);
}

interface GraphQLSearchParameters {
  query?: string;
  operationName?: string;
  variables?: string;
  extensions?: string;
  documentId?: string;
}

/**
 * The four GraphQL parameters of a query string, decoded as URLSearchParams would (first occurrence
 * wins, `+` is a space), without building the whole list. Returns null when URLSearchParams is needed
 * for exactness: an encoded name, a leading `?`, or a value decodeURIComponent refuses (an invalid
 * escape or invalid UTF-8, which URLSearchParams keeps or replaces).
 */
function searchParameters(search: string): GraphQLSearchParameters | null {
  return recentSearches.remember(search, decodeSearch);
}

// A GET endpoint sees the same query strings again and again (CDN misses, polling clients): decoding
// one costs more than finding it. The decoded values are strings, shared safely between requests.
const recentSearches = new BoundedMemo<GraphQLSearchParameters | null>(1 << 18);

function decodeSearch(search: string): GraphQLSearchParameters | null {
  const found: GraphQLSearchParameters = {};
  if (search.charCodeAt(0) === 63 /* ? */) return null;
  const end = search.length;
  let start = 0;
  while (start < end) {
    let amp = search.indexOf('&', start);
    if (amp === -1) amp = end;
    let eq = search.indexOf('=', start);
    if (eq === -1 || eq > amp) eq = amp;
    const name = search.slice(start, eq);
    if (name.includes('%') || name.includes('+')) return null;
    if ((name === 'query' || name === 'operationName' || name === 'variables' || name === 'extensions' || name === 'documentId') && found[name] === undefined) {
      let value = eq === amp ? '' : search.slice(eq + 1, amp);
      if (value.includes('+')) value = value.replaceAll('+', ' ');
      if (value.includes('%')) {
        try {
          value = decodeURIComponent(value);
        } catch {
          return null;
        }
      }
      found[name] = value;
    }
    start = amp + 1;
  }
  return found;
}

/**
 * The parameters once the query resolver (persisted queries, trusted documents) has had its say;
 * synchronous when it has none. `sent` gives the query, operationName and documentId as sent.
 */
function resolved(
  sent: { query?: unknown; operationName?: unknown; documentId?: unknown },
  variables: unknown,
  extensions: unknown,
  request: Request,
  resolveQuery: QueryResolver | undefined,
): RequestParams | Promise<RequestParams> {
  const { query, operationName } = sent;
  if (resolveQuery === undefined) return checked(query, operationName, variables, extensions);
  const actual = resolveQuery(query, extensions, sent.documentId, request);
  if (actual instanceof Promise) return actual.then((q) => checked(q, operationName, variables, extensions));
  return checked(actual, operationName, variables, extensions);
}

function jsonParameter(raw: string | null, name: string): unknown {
  if (raw === null || raw === '') return undefined;
  const known = recentJsonParameters.get(raw);
  if (known !== undefined && known !== seenOnce) return jsonCopy(known.value);
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new Error(`Unparsable URL parameter "${name}": it must be a URL-encoded JSON object`);
  }
  if (known !== seenOnce) recentJsonParameters.set(raw, seenOnce);
  else {
    const kept = copyToKeep(value);
    if (kept) recentJsonParameters.set(raw, kept);
  }
  return value;
}

// GETs repeat their variables and extensions (persisted queries send both in the URL), remembered as
// bodies are: from their second time, each request getting its own copy.
const recentJsonParameters = new BoundedMemo<{ value: unknown } | typeof seenOnce>(1 << 18);

function checked(query: unknown, operationName: unknown, variables: unknown, extensions: unknown): RequestParams {
  if (query === undefined || query === null) throw new MalformedRequestError('Missing query: send the GraphQL document in "query"');
  if (typeof query !== 'string') throw new MalformedRequestError('Invalid query: "query" must be a string');
  if (operationName != null && typeof operationName !== 'string') {
    throw new MalformedRequestError('Invalid operationName: "operationName" must be a string or null');
  }
  if (variables != null && !isObject(variables)) throw new MalformedRequestError('Invalid variables: "variables" must be an object or null');
  if (extensions != null && !isObject(extensions)) {
    throw new MalformedRequestError('Invalid extensions: "extensions" must be an object or null');
  }
  return {
    query,
    operationName: operationName as string | null | undefined,
    variables: variables as Record<string, unknown> | null | undefined,
    extensions: extensions as Record<string, unknown> | null | undefined,
  };
}

/** `application/json`, optionally with a UTF-8 charset (the only encoding GraphQL-over-HTTP allows). */
export function isJsonContentType(header: string | null): boolean {
  if (header === null) return false;
  if (header === applicationJson || header === jsonContentType) return true;
  const [mediaType, ...parameters] = header.split(';');
  if (mediaType.trim().toLowerCase() !== applicationJson) return false;
  for (const parameter of parameters) {
    const [name, value = ''] = parameter.split('=');
    if (name.trim().toLowerCase() !== 'charset') continue;
    const charset = value.trim().replace(/^"|"$/g, '').toLowerCase();
    if (charset !== 'utf-8' && charset !== 'utf8') return false;
  }
  return true;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
