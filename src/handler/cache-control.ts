import type { GraphQLSchema } from 'graphql';

/** `Cache-Control` for successful GET responses. */
export interface CacheControlOptions {
  /** Seconds a browser or CDN may reuse a response without asking again. */
  maxAge: number;
  /** Seconds a CDN may keep serving a stale response while it revalidates in the background. Default none. */
  staleWhileRevalidate?: number;
  /** `public` lets shared caches (CDNs) store responses; `private` only the browser. Default `public`. */
  scope?: 'public' | 'private';
}

/** max-age used when the schema has no mutation type and `cacheControl` is left unset. */
export const defaultReadOnlyMaxAge = 60;

/**
 * The Cache-Control value for successful GET results, or null for none. Unset means: a read-only
 * schema (no mutation type) gets `public, max-age=60`; a schema with mutations gets nothing, since
 * its query results may change at any time.
 */
export function cacheControlValue(schema: GraphQLSchema, option: CacheControlOptions | false | undefined): string | null {
  if (option === false) return null;
  if (option === undefined) {
    return schema.getMutationType() ? null : `public, max-age=${defaultReadOnlyMaxAge}`;
  }
  const { maxAge, staleWhileRevalidate, scope = 'public' } = option;
  if (!Number.isSafeInteger(maxAge) || maxAge < 0) {
    throw new TypeError(`createGraphQLHandler: cacheControl.maxAge must be a non-negative integer of seconds (got ${maxAge})`);
  }
  if (scope !== 'public' && scope !== 'private') {
    throw new TypeError(`createGraphQLHandler: cacheControl.scope must be "public" or "private" (got ${String(scope)})`);
  }
  let value = `${scope}, max-age=${maxAge}`;
  if (staleWhileRevalidate !== undefined) {
    if (!Number.isSafeInteger(staleWhileRevalidate) || staleWhileRevalidate < 0) {
      throw new TypeError(`createGraphQLHandler: cacheControl.staleWhileRevalidate must be a non-negative integer of seconds (got ${staleWhileRevalidate})`);
    }
    value += `, stale-while-revalidate=${staleWhileRevalidate}`;
  }
  return value;
}
