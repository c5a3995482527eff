import { print, type DocumentNode } from 'graphql';
import { Lru } from './lru.ts';

/**
 * Remembers the response bytes of successful operations on a read-only schema, keyed by the
 * normalized document (printed once per parsed document, so spacing and comments do not matter),
 * the operation name and the variables. A hit skips validation lookups, the context factory and
 * execution. Responses with errors are never kept. Only for schemas whose results do not depend on
 * who asks: the key has nothing of the request or the context in it.
 */
export interface ResponseCacheOptions {
  /** Responses kept (LRU). Default 1000. */
  maxEntries?: number;
  /** Milliseconds a response is reused. Default 60,000. */
  ttl?: number;
  /** Clock in milliseconds, for tests. Default `Date.now`. */
  now?: () => number;
}

export interface CachedResponse {
  body: string;
  /** Computed on first use by a GET, then kept with the body. */
  etag: string | undefined;
  expires: number;
}

export interface ResponseCache {
  keyOf(document: DocumentNode, operationName: string | null | undefined, variables: unknown): string;
  get(key: string): CachedResponse | undefined;
  set(key: string, body: string, etag: string | undefined): void;
  readonly size: number;
  /** Responses served from the cache so far. */
  readonly hits: number;
}

export function createResponseCache(options: ResponseCacheOptions): ResponseCache {
  const maxEntries = options.maxEntries ?? 1000;
  const ttl = options.ttl ?? 60_000;
  const now = options.now ?? Date.now;
  if (!Number.isSafeInteger(maxEntries) || maxEntries <= 0) {
    throw new TypeError(`createGraphQLHandler: responseCache.maxEntries must be a positive integer (got ${maxEntries})`);
  }
  if (!(ttl > 0)) throw new TypeError(`createGraphQLHandler: responseCache.ttl must be a positive number of milliseconds (got ${ttl})`);

  const entries = new Lru<string, CachedResponse>(maxEntries);
  const printed = new WeakMap<DocumentNode, string>();
  let hits = 0;

  return {
    keyOf(document, operationName, variables) {
      let text = printed.get(document);
      if (text === undefined) {
        text = print(document);
        printed.set(document, text);
      }
      return `${operationName ?? ''}\n${JSON.stringify(variables ?? null)}\n${text}`;
    },
    get(key) {
      const entry = entries.get(key);
      if (entry === undefined) return undefined;
      if (entry.expires <= now()) {
        entries.delete(key);
        return undefined;
      }
      hits++;
      return entry;
    },
    set(key, body, etag) {
      entries.set(key, { body, etag, expires: now() + ttl });
    },
    get size() {
      return entries.size;
    },
    get hits() {
      return hits;
    },
  };
}
