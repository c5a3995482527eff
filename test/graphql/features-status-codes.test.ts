// httpStatusCodes: 'draft-2026' answers with the status codes of the GraphQL-over-HTTP draft as
// rewritten in 2026 (400 unreadable, 422 unprocessable, 294 partial success) under every media type;
// the default keeps today's (graphql-http's audits hold it: audit-*.test.ts). Apollo Client 4 reads
// both from the live handler.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApolloClient, CombinedGraphQLErrors, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import { createCountriesHandler } from '../../src/countries-endpoint.ts';
import { createReadOnlySchema, endpoint, getRequest, graphqlResponseJson, postRequest } from '../support/graphql-requests.ts';
import type { GraphQLFetchHandler } from '../../src/handler/options.ts';
import { createTestSchema } from '../support/graphql-fixtures.ts';

const { schema } = createReadOnlySchema();
const draft = createGraphQLHandler({ schema, httpStatusCodes: 'draft-2026', onMaskedError: () => {} });
const gqlType = 'application/graphql-response+json; charset=utf-8';
const jsonType = 'application/json; charset=utf-8';

/** Each request, what the draft answers it with, and whether the body has data. */
const cases: { name: string; body: unknown; status: number }[] = [
  { name: 'success', body: { query: '{ greeting }' }, status: 200 },
  { name: 'a field error beside data (partial success)', body: { query: '{ greeting fails }' }, status: 294 },
  { name: 'JSON that does not parse', body: '{"query":', status: 400 },
  { name: 'a document that does not parse', body: { query: '{' }, status: 400 },
  { name: 'no query (a misspelt parameter)', body: { qeury: '{ greeting }' }, status: 422 },
  { name: 'variables that are not an object', body: { query: 'query ($n: String) { greeting(name: $n) }', variables: [7] }, status: 422 },
  { name: 'a JSON array body with batching off', body: [{ query: '{ greeting }' }], status: 422 },
  { name: 'a document that fails validation', body: { query: '{ nope }' }, status: 422 },
  { name: 'no operation to pick', body: { query: 'query A { greeting } query B { greeting }' }, status: 422 },
  { name: 'an unknown operationName', body: { query: 'query A { greeting }', operationName: 'B' }, status: 422 },
  { name: 'variables that do not coerce', body: { query: 'query ($n: String!) { greeting(name: $n) }', variables: { n: 5 } }, status: 422 },
];

test("draft-2026: each failure gets the draft's status, under application/graphql-response+json and application/json alike", async () => {
  for (const { name, body, status } of cases) {
    for (const accept of [graphqlResponseJson, 'application/json']) {
      const response = await draft(postRequest(body, { accept }));
      assert.equal(response.status, status, `${name} (${accept})`);
      const parsed = await response.json();
      // 2xx keeps the negotiated type; anything else says it is a GraphQL response.
      const expectedType = status < 300 ? (accept === 'application/json' ? jsonType : gqlType) : gqlType;
      assert.equal(response.headers.get('content-type'), expectedType, `${name} (${accept})`);
      assert.equal('data' in parsed, status < 300, `${name}: data exactly when 2xx`);
      if (status !== 200) assert.ok(parsed.errors.length > 0, name);
    }
  }
});

test('draft-2026: GET answers the same way; transport refusals keep their status and application/json', async () => {
  assert.equal((await draft(getRequest({ query: '{ nope }' }))).status, 422);
  assert.equal((await draft(getRequest({ query: '{ greeting fails }' }))).status, 294);
  const withMutations = createGraphQLHandler({ schema: createTestSchema().schema, httpStatusCodes: 'draft-2026' });
  const mutationOverGet = await withMutations(getRequest({ query: 'mutation { increment }' }));
  assert.equal(mutationOverGet.status, 405);
  assert.equal(mutationOverGet.headers.get('allow'), 'POST');
  const form = await draft(new Request(endpoint, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{ greeting }' }));
  assert.equal(form.status, 415);
  assert.equal(form.headers.get('content-type'), jsonType);
});

test('draft-2026 on the countries API: variables the compiled plan refuses are 422 too', async () => {
  const handler = createCountriesHandler({ httpStatusCodes: 'draft-2026' });
  const query = 'query ($code: ID!) { country(code: $code) { name } }';
  // The plan takes over once a document has run twice: every round must answer the same.
  for (let round = 0; round < 4; round++) {
    assert.equal((await handler(postRequest({ query, variables: { code: 'BR' } }))).status, 200);
    const refused = await handler(postRequest({ query, variables: { code: { no: 1 } } }));
    assert.equal(refused.status, 422, `round ${round}`);
    assert.equal('data' in (await refused.json()), false);
  }
});

test("compatible (the default): today's codes, 200 under application/json and 400 without data under application/graphql-response+json", async () => {
  const handler = createGraphQLHandler({ schema });
  const invalid = await handler(postRequest({ query: '{ nope }' }));
  assert.equal(invalid.status, 200);
  assert.equal(invalid.headers.get('content-type'), jsonType);
  assert.equal((await handler(postRequest({ query: '{ nope }' }, { accept: graphqlResponseJson }))).status, 400);
  assert.equal((await handler(postRequest({ query: '{ greeting fails }' }, { accept: graphqlResponseJson }))).status, 200);
  assert.equal((await handler(postRequest({ qeury: '{ greeting }' }))).status, 400);
  assert.throws(() => createGraphQLHandler({ schema, httpStatusCodes: 'draft-2025' as never }), /httpStatusCodes must be one of compatible, draft-2026/);
});

/** Apollo Client 4 over its HttpLink, fetching from the handler in-process. */
function apolloClient(handler: GraphQLFetchHandler, headers?: Record<string, string>) {
  const fetch = (input: RequestInfo | URL, init?: RequestInit) => handler(new Request(input, init));
  return new ApolloClient({ link: new HttpLink({ uri: endpoint, fetch, headers }), cache: new InMemoryCache() });
}

test('Apollo Client 4 reads the draft: a 294 is data with errors, a 422 its GraphQL errors, even when it accepts only application/json', async () => {
  for (const headers of [undefined, { accept: 'application/json' }]) {
    const client = apolloClient(draft, headers);
    const partial = await client.query<{ greeting: string; fails: string | null }>({
      query: gql('{ greeting fails }'),
      errorPolicy: 'all',
      fetchPolicy: 'no-cache',
    });
    assert.equal(partial.data?.greeting, 'Hello, world');
    assert.ok(CombinedGraphQLErrors.is(partial.error), String(partial.error));
    assert.equal(partial.error.errors[0].message, 'Unexpected error.');

    const invalid = await client.query({ query: gql('{ nope }'), errorPolicy: 'all', fetchPolicy: 'no-cache' });
    assert.ok(CombinedGraphQLErrors.is(invalid.error), `a GraphQL error, not a ServerError: ${invalid.error}`);
    assert.match(invalid.error.errors[0].message, /Cannot query field "nope"/);
  }
});
