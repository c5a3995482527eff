// Error masking, CORS and CSRF safety of the handler, in-process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { GraphQLError } from 'graphql';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import { countriesSchema } from '../../src/countries/index.ts';
import { createReadOnlySchema, endpoint, getRequest, postRequest } from '../support/graphql-requests.ts';

test('unexpected resolver errors are masked by default, keeping path and locations, and reported', async () => {
  const { schema } = createReadOnlySchema();
  const masked: GraphQLError[] = [];
  const handler = createGraphQLHandler({ schema, onMaskedError: (error) => masked.push(error) });
  const res = await handler(postRequest({ query: '{ greeting\n  fails }' }));
  assert.equal(res.status, 200);
  const text = await res.text();
  assert.ok(!text.includes('hunter2'), 'the secret stays on the server');
  assert.deepEqual(JSON.parse(text), {
    errors: [{ message: 'Unexpected error.', locations: [{ line: 2, column: 3 }], path: ['fails'] }],
    data: { greeting: 'Hello, world', fails: null },
  });
  assert.equal(masked.length, 1);
  assert.equal(masked[0].originalError?.message, 'database password is hunter2');
});

test('deliberate GraphQLErrors from resolvers, validation and request errors are not masked', async () => {
  const handler = createGraphQLHandler({ schema: countriesSchema, onMaskedError: () => assert.fail('nothing to mask') });
  const lang = await (await handler(postRequest({ query: '{ country(code: "BR") { name(lang: "xx") } }' }))).json();
  assert.equal(lang.errors[0].extensions.code, 'VALIDATION_ERROR');
  assert.match(lang.errors[0].message, /Invalid lang "xx"/);
  const invalid = await (await handler(postRequest({ query: '{ nope }' }))).json();
  assert.match(invalid.errors[0].message, /Cannot query field "nope"/);
  const variable = await (await handler(postRequest({ query: 'query($c: ID!) { country(code: $c) { code } }', variables: {} }))).json();
  assert.match(variable.errors[0].message, /Variable "\$c"/);
});

test('maskErrors: false and development: true show resolver errors as they are', async () => {
  for (const options of [{ maskErrors: false }, { development: true }]) {
    const handler = createGraphQLHandler({ schema: createReadOnlySchema().schema, ...options });
    const body = await (await handler(postRequest({ query: '{ fails }' }))).json();
    assert.equal(body.errors[0].message, 'database password is hunter2', JSON.stringify(options));
  }
  // maskErrors wins over development.
  const handler = createGraphQLHandler({ schema: createReadOnlySchema().schema, development: true, maskErrors: true, onMaskedError: () => {} });
  assert.equal((await (await handler(postRequest({ query: '{ fails }' }))).json()).errors[0].message, 'Unexpected error.');
});

test('without cors there are no CORS headers and a preflight is refused like any OPTIONS', async () => {
  const handler = createGraphQLHandler({ schema: countriesSchema });
  const res = await handler(postRequest({ query: '{ __typename }' }, { origin: 'https://evil.example' }));
  assert.equal(res.status, 200);
  for (const [name] of res.headers) assert.ok(!name.startsWith('access-control-'), name);
  const preflight = await handler(
    new Request(endpoint, { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } }),
  );
  assert.equal(preflight.status, 405);
  assert.equal(preflight.headers.get('access-control-allow-origin'), null);
});

test('cors: allowed origins get their origin echoed, others none; preflight 204 only for allowed ones', async () => {
  const handler = createGraphQLHandler({
    schema: countriesSchema,
    cors: { origin: ['https://app.example'], credentials: true, maxAge: 120, exposeHeaders: ['etag'] },
  });
  const allowed = await handler(postRequest({ query: '{ __typename }' }, { origin: 'https://app.example' }));
  assert.equal(allowed.headers.get('access-control-allow-origin'), 'https://app.example');
  assert.equal(allowed.headers.get('access-control-allow-credentials'), 'true');
  assert.equal(allowed.headers.get('access-control-expose-headers'), 'etag');
  assert.equal(allowed.headers.get('vary'), 'Origin');
  const viaGet = await handler(getRequest({ query: '{ __typename }' }, { origin: 'https://app.example' }));
  assert.equal(viaGet.headers.get('access-control-allow-origin'), 'https://app.example');
  assert.equal(viaGet.headers.get('vary'), 'Accept, Origin');

  const denied = await handler(postRequest({ query: '{ __typename }' }, { origin: 'https://evil.example' }));
  assert.equal(denied.status, 200, 'the browser, not the server, withholds the response');
  assert.equal(denied.headers.get('access-control-allow-origin'), null);
  assert.equal(denied.headers.get('access-control-allow-credentials'), null);

  const preflight = (origin: string, method = 'POST', headers = 'content-type') =>
    handler(
      new Request(endpoint, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
      }),
    );
  const ok = await preflight('https://app.example');
  assert.equal(ok.status, 204);
  assert.equal(ok.headers.get('access-control-allow-origin'), 'https://app.example');
  assert.equal(ok.headers.get('access-control-allow-methods'), 'GET, POST, OPTIONS');
  assert.equal(ok.headers.get('access-control-allow-headers'), 'content-type, accept, authorization');
  assert.equal(ok.headers.get('access-control-max-age'), '120');
  assert.equal(ok.headers.get('access-control-allow-credentials'), 'true');

  const evil = await preflight('https://evil.example');
  assert.equal(evil.status, 403);
  assert.equal(evil.headers.get('access-control-allow-origin'), null);
  assert.match(await evil.text(), /Origin https:\/\/evil\.example is not allowed/);
  assert.equal((await preflight('https://app.example', 'DELETE')).status, 403);
  const badHeader = await preflight('https://app.example', 'POST', 'content-type, x-secret');
  assert.equal(badHeader.status, 403);
  assert.match(await badHeader.text(), /x-secret/);

  // A predicate works as well; errors outside the endpoint carry CORS headers too, so pages can read them.
  const byPredicate = createGraphQLHandler({ schema: countriesSchema, cors: { origin: (o) => o.endsWith('.example') } });
  const notFound = await byPredicate(new Request('http://localhost/elsewhere', { headers: { origin: 'https://a.example' } }));
  assert.equal(notFound.status, 404);
  assert.equal(notFound.headers.get('access-control-allow-origin'), 'https://a.example');
  assert.throws(() => createGraphQLHandler({ schema: countriesSchema, cors: { origin: ['*'] } }), /cors\.origin/);
});

test('CSRF: only JSON POST bodies are accepted; form, multipart and text bodies are refused unexecuted', async () => {
  const { schema, calls } = createReadOnlySchema();
  const handler = createGraphQLHandler({ schema });
  const simpleBodies: [string, BodyInit][] = [
    ['application/x-www-form-urlencoded', 'query=%7B+greeting+%7D'],
    ['text/plain', '{"query":"{ greeting }"}'],
    ['text/plain;charset=UTF-8', '{"query":"{ greeting }"}'],
  ];
  for (const [contentType, body] of simpleBodies) {
    const res = await handler(new Request(endpoint, { method: 'POST', headers: { 'content-type': contentType }, body }));
    assert.equal(res.status, 415, contentType);
    assert.match((await res.json()).errors[0].message, /Content-Type/);
  }
  const form = new FormData();
  form.set('query', '{ greeting }');
  const multipart = await handler(new Request(endpoint, { method: 'POST', body: form }));
  assert.equal(multipart.status, 415);
  const noType = await handler(new Request(endpoint, { method: 'POST', body: '{"query":"{ greeting }"}' }));
  assert.equal(noType.status, 415, 'a bare string body (text/plain)');
  assert.equal(calls.greeting, 0, 'nothing ran');
});
