import { GraphQLError } from 'graphql';
import { Lru } from './lru.ts';

/**
 * Automatic persisted queries, Apollo's protocol: a client sends
 * `extensions.persistedQuery = { version: 1, sha256Hash }` without the query; an unknown hash gets a
 * `PersistedQueryNotFound` error, after which the client sends hash and query together once, and the
 * query is remembered under its hash. Works over GET (hash-only requests make short, cacheable URLs)
 * and POST.
 */

/** Where queries are remembered by their SHA-256 (lowercase hex). Either method may be async. */
export interface PersistedQueryStore {
  get(sha256Hash: string): string | undefined | null | Promise<string | undefined | null>;
  set(sha256Hash: string, query: string): void | Promise<void>;
}

export interface PersistedQueriesOptions {
  /** Default: an in-memory LRU of `maxEntries` queries. */
  store?: PersistedQueryStore;
  /** Size of the default in-memory store. Default 1000. */
  maxEntries?: number;
}

export const defaultPersistedQueryEntries = 1000;

/** An in-memory LRU store (per process or isolate). */
export function createMemoryPersistedQueryStore(maxEntries = defaultPersistedQueryEntries): PersistedQueryStore {
  if (!Number.isSafeInteger(maxEntries) || maxEntries <= 0) {
    throw new TypeError(`persistedQueries.maxEntries must be a positive integer (got ${maxEntries})`);
  }
  const queries = new Lru<string, string>(maxEntries);
  return {
    get: (hash) => queries.get(hash),
    set: (hash, query) => queries.set(hash, query),
  };
}

/**
 * Turns the `query`, `extensions` and `documentId` of a request into the query to run (or throws the
 * protocol's errors). Automatic persisted queries read the first two; trusted documents all.
 */
export type QueryResolver = (query: unknown, extensions: unknown, documentId: unknown, request: Request) => unknown | Promise<unknown>;

const sha256Hex = /^[0-9a-f]{64}$/;

/** `maxQueryLength`: longer queries are not stored (the request is then refused by the length limit). */
export function createPersistedQueryResolver(options: PersistedQueriesOptions | false | undefined, maxQueryLength = Infinity): QueryResolver {
  if (options === false) {
    // Tells clients to stop trying, rather than reporting a missing query.
    return (query, extensions) => {
      if (query == null && persistedQueryOf(extensions) !== undefined) {
        throw new GraphQLError('PersistedQueryNotSupported', { extensions: { code: 'PERSISTED_QUERY_NOT_SUPPORTED' } });
      }
      return query;
    };
  }
  const store = options?.store ?? createMemoryPersistedQueryStore(options?.maxEntries);

  return (query, extensions) => {
    const persisted = persistedQueryOf(extensions);
    if (persisted === undefined) return query; // the common case: no extension, nothing to wait for
    if (typeof persisted !== 'object' || persisted === null || Array.isArray(persisted)) {
      throw new Error('Invalid extensions.persistedQuery: it must be an object { version: 1, sha256Hash }');
    }
    const { version, sha256Hash } = persisted as { version?: unknown; sha256Hash?: unknown };
    if (version !== 1) {
      throw new Error(`Unsupported persistedQuery version ${JSON.stringify(version)}: only version 1 is supported`);
    }
    if (typeof sha256Hash !== 'string' || !sha256Hex.test(sha256Hash.toLowerCase())) {
      throw new Error('Invalid persistedQuery.sha256Hash: it must be the SHA-256 of the query as 64 hex digits');
    }
    const hash = sha256Hash.toLowerCase();
    if (query == null) return lookUp(store, hash);
    if (typeof query !== 'string' || query.length > maxQueryLength) return query; // reported by the checks that follow
    return register(store, hash, query);
  };
}

async function lookUp(store: PersistedQueryStore, hash: string): Promise<string> {
  const query = await store.get(hash);
  if (typeof query !== 'string') {
    // A GraphQL error (not a request error), so clients see the code and retry with the full query.
    throw new GraphQLError('PersistedQueryNotFound', { extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } });
  }
  return query;
}

async function register(store: PersistedQueryStore, hash: string, query: string): Promise<string> {
  const actual = await sha256HexOf(query);
  if (actual !== hash) {
    throw new Error(`persistedQuery.sha256Hash does not match the query: the query's SHA-256 is ${actual}`);
  }
  await store.set(hash, query);
  return query;
}

function persistedQueryOf(extensions: unknown): unknown {
  if (typeof extensions !== 'object' || extensions === null) return undefined;
  return (extensions as Record<string, unknown>).persistedQuery ?? undefined;
}

/** SHA-256 of the UTF-8 text as lowercase hex, with the Web Crypto API every target runtime has. */
export async function sha256HexOf(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  let hex = '';
  for (const byte of digest) hex += byte.toString(16).padStart(2, '0');
  return hex;
}
