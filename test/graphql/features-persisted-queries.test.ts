// Automatic persisted queries (Apollo's extensions.persistedQuery protocol) over GET and POST.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import { countriesSchema } from '../../src/countries/index.ts';
import type { PersistedQueryStore } from '../../src/handler/persisted-queries.ts';
import { getRequest, graphqlResponseJson, postRequest } from '../support/graphql-requests.ts';

const query = 'query Capital($code: ID!) { country(code: $code) { name capital } }';
const hash = createHash('sha256').update(query).digest('hex');
const persisted = (sha256Hash = hash) => ({ persistedQuery: { version: 1, sha256Hash } });

test('POST: an unknown hash gets PersistedQueryNotFound; hash + query registers it; hash alone then works', async () => {
  const handler = createGraphQLHandler({ schema: countriesSchema });
  const variables = { code: 'BR' };

  const miss = await handler(postRequest({ variables, extensions: persisted() }));
  assert.equal(miss.status, 200, 'application/json: a GraphQL error, status 200');
  assert.deepEqual(await miss.json(), {
    errors: [{ message: 'PersistedQueryNotFound', extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } }],
  });
  const strictMiss = await handler(postRequest({ variables, extensions: persisted() }, { accept: graphqlResponseJson }));
  assert.equal(strictMiss.status, 400, 'application/graphql-response+json: a request error');
  assert.equal((await strictMiss.json()).errors[0].extensions.code, 'PERSISTED_QUERY_NOT_FOUND');

  const register = await handler(postRequest({ query, variables, extensions: persisted() }));
  assert.deepEqual(await register.json(), { data: { country: { name: 'Brazil', capital: 'Brasília' } } });

  // Upper-case hex is the same hash.
  const hit = await handler(postRequest({ variables: { code: 'FR' }, extensions: persisted(hash.toUpperCase()) }));
  assert.equal(hit.status, 200);
  assert.deepEqual(await hit.json(), { data: { country: { name: 'France', capital: 'Paris' } } });
});

test('GET: hash-only URLs work once registered, and misses are not cacheable', async () => {
  const handler = createGraphQLHandler({ schema: countriesSchema });
  const variables = { code: 'JP' };
  const miss = await handler(getRequest({ variables, extensions: persisted() }));
  assert.equal(miss.status, 200);
  assert.equal((await miss.json()).errors[0].message, 'PersistedQueryNotFound');
  assert.equal(miss.headers.get('cache-control'), 'no-store', 'a CDN must not keep the miss');

  const register = await handler(getRequest({ query, variables, extensions: persisted() }));
  assert.deepEqual(await register.json(), { data: { country: { name: 'Japan', capital: 'Tokyo' } } });

  const hit = await handler(getRequest({ variables, extensions: persisted() }));
  assert.equal(hit.status, 200);
  assert.deepEqual(await hit.json(), { data: { country: { name: 'Japan', capital: 'Tokyo' } } });
  assert.equal(hit.headers.get('cache-control'), 'public, max-age=60');
  assert.ok(hit.headers.get('etag'));
  // A query registered over GET is known to POST as well.
  assert.equal((await (await handler(postRequest({ variables, extensions: persisted() }))).json()).data.country.name, 'Japan');
});

test('a hash that does not match the query, a bad hash or version are 400 with a message saying so', async () => {
  const handler = createGraphQLHandler({ schema: countriesSchema });
  const wrong = 'a'.repeat(64);
  const mismatch = await handler(postRequest({ query, variables: { code: 'BR' }, extensions: persisted(wrong) }));
  assert.equal(mismatch.status, 400);
  const { errors } = await mismatch.json();
  assert.match(errors[0].message, /sha256Hash does not match the query/);
  assert.ok(errors[0].message.includes(hash), 'names the right hash');
  // The mismatched hash was not registered.
  const after = await handler(postRequest({ variables: { code: 'BR' }, extensions: persisted(wrong) }));
  assert.equal((await after.json()).errors[0].message, 'PersistedQueryNotFound');

  const badHash = await handler(postRequest({ extensions: persisted('xyz') }));
  assert.equal(badHash.status, 400);
  assert.match((await badHash.json()).errors[0].message, /64 hex digits/);
  const badVersion = await handler(postRequest({ extensions: { persistedQuery: { version: 2, sha256Hash: hash } } }));
  assert.equal(badVersion.status, 400);
  assert.match((await badVersion.json()).errors[0].message, /Unsupported persistedQuery version 2/);
});

test('a custom store is used; persistedQueries: false answers PersistedQueryNotSupported', async () => {
  const saved = new Map<string, string>();
  const store: PersistedQueryStore = {
    get: async (h) => saved.get(h),
    set: async (h, q) => void saved.set(h, q),
  };
  const handler = createGraphQLHandler({ schema: countriesSchema, persistedQueries: { store } });
  await handler(postRequest({ query, variables: { code: 'BR' }, extensions: persisted() }));
  assert.equal(saved.get(hash), query);
  const other = createGraphQLHandler({ schema: countriesSchema, persistedQueries: { store } });
  assert.equal((await (await other(postRequest({ variables: { code: 'BR' }, extensions: persisted() }))).json()).data.country.name, 'Brazil');

  const off = createGraphQLHandler({ schema: countriesSchema, persistedQueries: false });
  const res = await off(postRequest({ variables: { code: 'BR' }, extensions: persisted() }));
  assert.deepEqual(await res.json(), {
    errors: [{ message: 'PersistedQueryNotSupported', extensions: { code: 'PERSISTED_QUERY_NOT_SUPPORTED' } }],
  });
  // With the query included, a handler without APQ simply runs it.
  assert.equal((await (await off(postRequest({ query, variables: { code: 'BR' }, extensions: persisted() }))).json()).data.country.capital, 'Brasília');
});

test('the in-memory store forgets the least recently used query past maxEntries', async () => {
  const handler = createGraphQLHandler({ schema: countriesSchema, persistedQueries: { maxEntries: 2 } });
  const queries = ['{ a: country(code: "BR") { code } }', '{ b: country(code: "BR") { code } }', '{ c: country(code: "BR") { code } }'];
  const hashOf = (q: string) => createHash('sha256').update(q).digest('hex');
  for (const q of queries) await handler(postRequest({ query: q, extensions: persisted(hashOf(q)) }));
  const status = async (q: string) => (await (await handler(postRequest({ extensions: persisted(hashOf(q)) }))).json()).errors?.[0]?.message ?? 'hit';
  assert.equal(await status(queries[0]), 'PersistedQueryNotFound');
  assert.equal(await status(queries[1]), 'hit');
  assert.equal(await status(queries[2]), 'hit');
});

test('a query over maxQueryLength is refused and not stored', async () => {
  const saved = new Map<string, string>();
  const store: PersistedQueryStore = { get: (h) => saved.get(h), set: (h, q) => void saved.set(h, q) };
  const handler = createGraphQLHandler({ schema: countriesSchema, persistedQueries: { store }, limits: { maxQueryLength: 40 } });
  const res = await handler(postRequest({ query, variables: { code: 'BR' }, extensions: persisted() }));
  assert.equal(res.status, 400);
  assert.match((await res.json()).errors[0].message, /limits\.maxQueryLength/);
  assert.equal(saved.size, 0);
});
