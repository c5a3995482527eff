// Batched requests (a JSON array body): refused unless `batching` is on; then answered in order, one
// operation after another, up to the limit (10 by default, as Yoga's). Apollo Client 4's
// BatchHttpLink sends the batches.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApolloClient, InMemoryCache, gql } from '@apollo/client';
import { BatchHttpLink } from '@apollo/client/link/batch-http';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import { createCountriesHandler } from '../../src/countries-endpoint.ts';
import { endpoint, graphqlResponseJson, postRequest } from '../support/graphql-requests.ts';
import { createTestSchema } from '../support/graphql-fixtures.ts';

test('batching off (the default): an array body is a request error saying so, 422 under the 2026 draft', async () => {
  const body = [{ query: '{ hello }' }, { query: '{ a }' }];
  const refused = await createGraphQLHandler({ schema: createTestSchema().schema })(postRequest(body));
  assert.equal(refused.status, 400);
  assert.match((await refused.json()).errors[0].message, /Batched requests \(a JSON array\) are not accepted here/);
  const draft = await createGraphQLHandler({ schema: createTestSchema().schema, httpStatusCodes: 'draft-2026' })(postRequest(body));
  assert.equal(draft.status, 422);
});

test("Apollo Client 4's BatchHttpLink: three queries in one request, each answered in order", async () => {
  const handler = createCountriesHandler({ batching: true });
  const sent: unknown[] = [];
  const fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    sent.push(await request.clone().json());
    return handler(request);
  };
  const client = new ApolloClient({ link: new BatchHttpLink({ uri: endpoint, fetch, batchMax: 10, batchInterval: 20 }), cache: new InMemoryCache() });
  const query = gql`
    query Capital($code: ID!) {
      country(code: $code) {
        capital
      }
    }
  `;
  const results = await Promise.all(
    ['BR', 'FR', 'JP'].map((code) => client.query<{ country: { capital: string } }>({ query, variables: { code }, fetchPolicy: 'no-cache' })),
  );
  assert.deepEqual(
    results.map((result) => result.data?.country.capital),
    ['Brasília', 'Paris', 'Tokyo'],
  );
  assert.equal(sent.length, 1, 'one HTTP request');
  assert.ok(Array.isArray(sent[0]) && sent[0].length === 3, 'carrying the three operations');
});

test('operations run one after another, in order, each with its own errors; the batch is 200 in the negotiated type', async () => {
  const handler = createGraphQLHandler({ schema: createTestSchema().schema, batching: true, onMaskedError: () => {} });
  const response = await handler(
    postRequest(
      [
        { query: 'mutation { increment }' },
        { query: 'mutation { increment(by: 5) }' },
        { query: '{ count }' },
        { query: '{' },
        { query: '{ nope }' },
        { qeury: '{ count }' },
        'not an object',
        { query: '{ a boom }' },
      ],
      { accept: graphqlResponseJson },
    ),
  );
  assert.equal(response.status, 200);
  assert.equal(response.headers.get('content-type'), 'application/graphql-response+json; charset=utf-8');
  const results = (await response.json()) as { data?: Record<string, unknown>; errors?: { message: string }[] }[];
  assert.equal(results.length, 8);
  assert.deepEqual(results.slice(0, 3), [{ data: { increment: 1 } }, { data: { increment: 6 } }, { data: { count: 6 } }]);
  assert.match(results[3].errors![0].message, /Syntax Error/);
  assert.match(results[4].errors![0].message, /Cannot query field "nope"/);
  assert.match(results[5].errors![0].message, /Missing query/);
  assert.match(results[6].errors![0].message, /Each operation of a batch must be an object/);
  assert.deepEqual(results[7].data, { a: 1, boom: null });
});

test('more operations than the limit are 413 (10 by default, or batching.limit); an empty batch is 400', async () => {
  const { schema } = createTestSchema();
  const eleven = Array.from({ length: 11 }, () => ({ query: '{ a }' }));
  const byDefault = createGraphQLHandler({ schema, batching: true });
  const over = await byDefault(postRequest(eleven));
  assert.equal(over.status, 413);
  assert.deepEqual(await over.json(), { errors: [{ message: 'Batching is limited to 10 operations per request (got 11)' }] });
  assert.equal((await (await byDefault(postRequest(eleven.slice(0, 10)))).json()).length, 10);

  const two = createGraphQLHandler({ schema, batching: { limit: 2 } });
  assert.equal((await two(postRequest(eleven.slice(0, 3)))).status, 413);
  assert.equal((await two(postRequest(eleven.slice(0, 2)))).status, 200);
  const empty = await two(postRequest([]));
  assert.equal(empty.status, 400);
  assert.match((await empty.json()).errors[0].message, /empty batch/);
  assert.throws(() => createGraphQLHandler({ schema, batching: { limit: 0 } }), /batching.limit must be a positive integer/);
});

test('each operation of a batch goes through trusted documents like a request of its own', async () => {
  const query = 'query Hello { hello }';
  const handler = createGraphQLHandler({
    schema: createTestSchema().schema,
    batching: true,
    trustedDocuments: { manifest: { hello: query } },
  });
  const results = await (await handler(postRequest([{ documentId: 'hello' }, { query }, { documentId: 'nope' }]))).json();
  assert.deepEqual(results[0], { data: { hello: 'Hello, world' } });
  assert.equal(results[1].errors[0].extensions.code, 'PERSISTED_QUERY_ID_REQUIRED');
  assert.equal(results[2].errors[0].extensions.code, 'PERSISTED_QUERY_NOT_IN_LIST');
});
