// HTTP caching of GET responses (ETag, 304, Cache-Control, Vary) and the response cache, in-process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import { countriesSchema } from '../../src/countries/index.ts';
import { createTestSchema } from '../support/graphql-fixtures.ts';
import { createReadOnlySchema, getRequest, graphqlResponseJson, postRequest } from '../support/graphql-requests.ts';

const q1 = '{ country(code: "BR") { name capital currency languages { name } } }';

test('a successful GET carries a strong ETag; If-None-Match with it gets 304 with no body', async () => {
  const handler = createGraphQLHandler({ schema: countriesSchema });
  const first = await handler(getRequest({ query: q1 }));
  assert.equal(first.status, 200);
  const etag = first.headers.get('etag');
  assert.match(etag ?? '', /^"[0-9a-f]{16}-[0-9a-f]+"$/, 'a strong (not W/) quoted tag');
  const body = await first.text();
  assert.equal(JSON.parse(body).data.country.name, 'Brazil');

  const again = await handler(getRequest({ query: q1 }));
  assert.equal(again.headers.get('etag'), etag, 'same bytes, same tag');
  assert.equal(await again.text(), body);

  const revalidated = await handler(getRequest({ query: q1 }, { 'if-none-match': etag! }));
  assert.equal(revalidated.status, 304);
  assert.equal(await revalidated.text(), '');
  assert.equal(revalidated.headers.get('etag'), etag);
  assert.equal(revalidated.headers.get('cache-control'), 'public, max-age=60');

  // Lists, weak forms and * match (RFC 9110 weak comparison); another tag does not.
  for (const header of [`"x", ${etag}`, `W/${etag}`, '*']) {
    assert.equal((await handler(getRequest({ query: q1 }, { 'if-none-match': header }))).status, 304, header);
  }
  const stale = await handler(getRequest({ query: q1 }, { 'if-none-match': '"0000000000000000-1"' }));
  assert.equal(stale.status, 200);
  assert.equal(await stale.text(), body);

  // Another query (different bytes) has another tag.
  const other = await handler(getRequest({ query: '{ country(code: "FR") { name capital currency languages { name } } }' }));
  assert.notEqual(other.headers.get('etag'), etag);
});

test('Cache-Control: read-only schemas default to public max-age=60; Vary names Accept; errors are no-store', async () => {
  const handler = createGraphQLHandler({ schema: countriesSchema });
  const ok = await handler(getRequest({ query: q1 }));
  assert.equal(ok.headers.get('cache-control'), 'public, max-age=60');
  assert.equal(ok.headers.get('vary'), 'Accept');

  // A field error (invalid lang from the resolver) and a validation error are not cacheable.
  const fieldError = await handler(getRequest({ query: '{ country(code: "BR") { name(lang: "xx") } }' }));
  assert.equal(fieldError.status, 200);
  assert.ok((await fieldError.json()).errors);
  assert.equal(fieldError.headers.get('cache-control'), 'no-store');
  assert.equal(fieldError.headers.get('etag'), null);
  const invalid = await handler(getRequest({ query: '{ nope }' }, { accept: graphqlResponseJson }));
  assert.equal(invalid.status, 400);
  assert.equal(invalid.headers.get('cache-control'), 'no-store');

  // POST is never marked cacheable.
  const viaPost = await handler(postRequest({ query: q1 }));
  assert.equal(viaPost.status, 200);
  assert.equal(viaPost.headers.get('cache-control'), null);
  assert.equal(viaPost.headers.get('etag'), null);
});

test('Cache-Control: none by default on a schema with mutations; configurable; false turns it off', async () => {
  const { schema } = createTestSchema();
  const plain = createGraphQLHandler({ schema });
  const res = await plain(getRequest({ query: '{ a }' }));
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('cache-control'), null);
  assert.ok(res.headers.get('etag'), 'ETag on GET regardless');

  const configured = createGraphQLHandler({ schema, cacheControl: { maxAge: 300, staleWhileRevalidate: 30 } });
  assert.equal((await configured(getRequest({ query: '{ a }' }))).headers.get('cache-control'), 'public, max-age=300, stale-while-revalidate=30');
  const personal = createGraphQLHandler({ schema, cacheControl: { maxAge: 10, scope: 'private' } });
  assert.equal((await personal(getRequest({ query: '{ a }' }))).headers.get('cache-control'), 'private, max-age=10');

  const off = createGraphQLHandler({ schema: countriesSchema, cacheControl: false, etag: false });
  const bare = await off(getRequest({ query: q1 }));
  assert.equal(bare.headers.get('cache-control'), null);
  assert.equal(bare.headers.get('etag'), null);
  assert.equal(bare.headers.get('vary'), null);

  assert.throws(() => createGraphQLHandler({ schema, cacheControl: { maxAge: -1 } }), /cacheControl\.maxAge/);
});

test('the response cache answers repeated operations without executing them, with identical bytes', async () => {
  const { schema, calls } = createReadOnlySchema();
  let clock = 1_000;
  const cached = createGraphQLHandler({ schema, responseCache: { maxEntries: 10, ttl: 5_000, now: () => clock }, onMaskedError: () => {} });
  const uncached = createGraphQLHandler({ schema: createReadOnlySchema().schema });

  const query = 'query Greet($name: String) { greeting(name: $name) }';
  const first = await cached(postRequest({ query, variables: { name: 'Ada' } }));
  const firstBody = await first.text();
  assert.deepEqual(JSON.parse(firstBody), { data: { greeting: 'Hello, Ada' } });
  assert.equal(calls.greeting, 1);

  // Same operation, written differently (spacing, comment), over GET and POST: served from the cache.
  const reformatted = 'query Greet( $name : String ) {\n  # the same\n  greeting( name: $name )\n}';
  const viaPost = await cached(postRequest({ query: reformatted, variables: { name: 'Ada' } }));
  const viaGet = await cached(getRequest({ query, variables: { name: 'Ada' } }, { accept: graphqlResponseJson }));
  assert.equal(calls.greeting, 1, 'no further execution');
  assert.equal(await viaPost.text(), firstBody);
  assert.equal(viaGet.headers.get('content-type'), 'application/graphql-response+json; charset=utf-8');
  const getBody = await viaGet.text();
  assert.equal(getBody, firstBody);
  // Byte-identical to what an uncached handler answers.
  assert.equal(await (await uncached(postRequest({ query, variables: { name: 'Ada' } }))).text(), firstBody);
  // ETag on a cached GET equals the one computed from the same bytes without the cache.
  const etag = viaGet.headers.get('etag');
  assert.equal((await uncached(getRequest({ query, variables: { name: 'Ada' } }))).headers.get('etag'), etag);
  assert.equal((await cached(getRequest({ query, variables: { name: 'Ada' } }, { 'if-none-match': etag! }))).status, 304);

  // Other variables are another entry.
  assert.deepEqual(await (await cached(postRequest({ query, variables: { name: 'Bob' } }))).json(), {
    data: { greeting: 'Hello, Bob' },
  });
  assert.equal(calls.greeting, 2);

  // Past the ttl the operation runs again.
  clock += 5_001;
  await cached(postRequest({ query, variables: { name: 'Ada' } }));
  assert.equal(calls.greeting, 3);

  // Results with errors are never kept.
  await cached(postRequest({ query: '{ fails greeting }' }));
  await cached(postRequest({ query: '{ fails greeting }' }));
  assert.equal(calls.greeting, 5);
});

test('the response cache is refused for a schema with mutations', () => {
  const { schema } = createTestSchema();
  assert.throws(() => createGraphQLHandler({ schema, responseCache: {} }), /read-only schemas/);
});
