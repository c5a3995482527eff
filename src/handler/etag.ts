import { BoundedMemo } from './bounded-memo.ts';

/**
 * Strong entity tags for GET responses. The tag is a 64-bit hash of the body plus its length,
 * computed synchronously in plain JavaScript: about a microsecond for a small response, where
 * `crypto.subtle.digest` costs 25–50 µs per call on Node (it hops to a worker thread). A tag only
 * has to change whenever the bytes do, which a 64-bit hash does for all practical purposes; it is
 * not a defence against someone crafting collisions, and needs not be.
 */
export function etagOf(body: string): string {
  return recentTags.remember(body, hashTag);
}

// The same bodies are tagged over and over (that is what makes them cacheable): looking one up costs
// a native string hash instead of this loop.
const recentTags = new BoundedMemo<string>(1 << 20);

function hashTag(body: string): string {
  let h1 = 0x811c9dc5 ^ body.length;
  let h2 = 0x9e3779b9 ^ body.length;
  for (let i = 0; i < body.length; i++) {
    const c = body.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x5bd1e995);
  }
  // Final avalanche so that nearby bodies do not share tag prefixes.
  const a = Math.imul(h1 ^ (h1 >>> 16), 0x85ebca6b) ^ Math.imul(h2 ^ (h2 >>> 13), 0xc2b2ae35);
  const b = Math.imul(h2 ^ (h2 >>> 16), 0x85ebca6b) ^ Math.imul(a ^ (a >>> 13), 0xc2b2ae35);
  return `"${hex8(a)}${hex8(b)}-${body.length.toString(16)}"`;
}

function hex8(n: number): string {
  return (n >>> 0).toString(16).padStart(8, '0');
}

/**
 * Whether an If-None-Match header names `etag` (RFC 9110 §13.1.2: weak comparison, so `W/"x"`
 * matches `"x"`; `*` matches any current representation).
 */
export function ifNoneMatchHits(header: string | null, etag: string): boolean {
  if (header === null) return false;
  if (header === etag) return true;
  for (const raw of header.split(',')) {
    let tag = raw.trim();
    if (tag === '*') return true;
    if (tag.startsWith('W/')) tag = tag.slice(2);
    if (tag === etag) return true;
  }
  return false;
}
