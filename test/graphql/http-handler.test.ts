// The GraphQL-over-HTTP handler in-process: requests built with the web Request, no sockets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ValidationRule } from 'graphql';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import type { GraphQLHandlerOptions } from '../../src/handler/options.ts';
import { createTestSchema } from '../support/graphql-fixtures.ts';

const base = 'http://localhost/graphql';
const gqlResponse = 'application/graphql-response+json';

function setup(options: Partial<GraphQLHandlerOptions<any>> = {}) {
  const { schema, counter } = createTestSchema();
  const handler = createGraphQLHandler({ schema, onInternalError: () => {}, ...options });
  return { handler, counter };
}

function get(query: string, params: Record<string, string> = {}, headers: Record<string, string> = {}, url = base) {
  const target = new URL(url);
  target.searchParams.set('query', query);
  for (const [k, v] of Object.entries(params)) target.searchParams.set(k, v);
  return new Request(target, { headers });
}

function post(body: unknown, headers: Record<string, string> = {}, url = base) {
  return new Request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

test('GET runs a query and answers in the accepted media type', async () => {
  const { handler } = setup();
  const res = await handler(get('{ hello }', {}, { accept: gqlResponse }));
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^application\/graphql-response\+json/);
  assert.deepEqual(await res.json(), { data: { hello: 'Hello, world' } });
});

test('POST with a JSON body runs a query with variables and operationName', async () => {
  const { handler } = setup();
  const res = await handler(
    post({
      query: 'query A { a } query Greet($name: String) { hello(name: $name) }',
      operationName: 'Greet',
      variables: { name: 'skiff' },
      extensions: { anything: true },
    }),
  );
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { data: { hello: 'Hello, skiff' } });
});

test('GET accepts URL-encoded JSON variables', async () => {
  const { handler } = setup();
  const res = await handler(get('query($n: String) { hello(name: $n) }', { variables: '{"n":"get"}' }));
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { data: { hello: 'Hello, get' } });
});

test('data holds exactly the requested fields, in the requested order', async () => {
  const { handler } = setup();
  const res = await handler(post({ query: '{ c a item { z id y } b }' }));
  const text = await res.text();
  assert.equal(text, '{"data":{"c":3,"a":1,"item":{"z":"zed","id":"item-1","y":"why"},"b":2}}');
});

test('a mutation over GET is refused with 405 and Allow: POST, and does not run', async () => {
  const { handler, counter } = setup();
  const res = await handler(get('mutation { increment }', {}, { accept: gqlResponse }));
  assert.equal(res.status, 405);
  assert.equal(res.headers.get('allow'), 'POST');
  assert.equal(counter(), 0);
  const viaPost = await handler(post({ query: 'mutation { increment(by: 2) }' }));
  assert.equal(viaPost.status, 200);
  assert.deepEqual(await viaPost.json(), { data: { increment: 2 } });
  assert.equal(counter(), 2);
});

test('other paths answer 404; the path is configurable or can be any', async () => {
  const { handler } = setup();
  const missing = await handler(get('{ a }', {}, {}, 'http://localhost/other'));
  assert.equal(missing.status, 404);
  assert.match((await missing.json()).errors[0].message, /\/graphql/);
  assert.equal((await handler(get('{ a }', {}, {}, 'http://localhost/graphql/extra'))).status, 404);

  const custom = setup({ path: '/api/gql' }).handler;
  assert.equal((await custom(get('{ a }', {}, {}, 'http://localhost/api/gql'))).status, 200);
  assert.equal((await custom(get('{ a }'))).status, 404);

  const anywhere = setup({ path: null }).handler;
  assert.equal((await anywhere(get('{ a }', {}, {}, 'http://localhost/api/graphql'))).status, 200);
  assert.throws(() => setup({ path: 'graphql' }), /path must start with "\/"/);
});

test('methods other than GET and POST get 405 with Allow: GET, POST', async () => {
  const { handler } = setup();
  const res = await handler(new Request(base, { method: 'PUT', body: '{}' }));
  assert.equal(res.status, 405);
  assert.equal(res.headers.get('allow'), 'GET, POST');
});

test('malformed requests get 400 with a message saying what to fix', async () => {
  const { handler } = setup();
  const cases: Array<[Request, RegExp]> = [
    [post('{"query": '), /Unparsable JSON body/],
    [post(''), /Missing body/],
    [post({ notquery: '{ a }' }), /Missing query/],
    [post([{ query: '{ a }' }]), /Batched requests \(a JSON array\) are not accepted/],
    [post('"{ a }"'), /must be an object/],
    [post({ query: 42 }), /Invalid query/],
    [post({ query: '{ a }', variables: 'x' }), /Invalid variables/],
    [post({ query: '{ a }', operationName: 1 }), /Invalid operationName/],
    [post({ query: '{ a }', extensions: [] }), /Invalid extensions/],
    [get('{ a }', { variables: '{nope' }), /Unparsable URL parameter "variables"/],
    [new Request(base), /Missing query/],
  ];
  for (const [request, message] of cases) {
    const res = await handler(request);
    assert.equal(res.status, 400, `${request.method} ${message}`);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.match((await res.json()).errors[0].message, message);
  }
});

test('POST bodies that are not application/json get 415', async () => {
  const { handler } = setup();
  for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1']) {
    const res = await handler(post({ query: '{ a }' }, { 'content-type': contentType }));
    assert.equal(res.status, 415, contentType);
  }
  const noType = await handler(new Request(base, { method: 'POST', body: new Uint8Array([123, 125]) }));
  assert.equal(noType.status, 415);
  assert.match((await noType.json()).errors[0].message, /Content-Type: application\/json/);
  const ok = await handler(post({ query: '{ a }' }, { 'content-type': 'Application/JSON; charset=UTF-8' }));
  assert.equal(ok.status, 200);
});

test('accept negotiation: graphql-response+json, json, wildcards, and 406', async () => {
  const { handler } = setup();
  const cases: Array<[string | undefined, number, string | null]> = [
    [gqlResponse, 200, gqlResponse],
    ['application/json', 200, 'application/json'],
    [`${gqlResponse}, application/json`, 200, gqlResponse],
    ['application/json, ' + gqlResponse, 200, 'application/json'],
    ['*/*', 200, 'application/json'],
    ['application/*', 200, 'application/json'],
    [undefined, 200, 'application/json'],
    ['text/html', 406, null],
    [`${gqlResponse};q=0, application/json`, 200, 'application/json'],
    [`application/json;q=0.5, ${gqlResponse}`, 200, gqlResponse],
    [`application/json;q=0.9, ${gqlResponse};q=0.8`, 200, 'application/json'],
    ['text/html, */*;q=0.1', 200, 'application/json'],
    [`application/json;q=0, */*`, 200, gqlResponse],
    [`${gqlResponse}; charset=utf-8`, 200, gqlResponse],
    ['application/json; charset=latin1', 406, null],
    ['application/json;q=0', 406, null],
  ];
  for (const [accept, status, type] of cases) {
    const res = await handler(post({ query: '{ a }' }, accept ? { accept } : {}));
    assert.equal(res.status, status, String(accept));
    if (type) assert.equal(res.headers.get('content-type'), `${type}; charset=utf-8`, String(accept));
    else assert.match(res.headers.get('accept') ?? '', /application\/graphql-response\+json/);
  }
});

test('GraphQL errors: 200 under application/json, 400 without data under graphql-response+json', async () => {
  const { handler } = setup();
  for (const query of ['{', '{ nope }', 'query($n: Int!) { a }']) {
    const asJson = await handler(post({ query }, { accept: 'application/json' }));
    assert.equal(asJson.status, 200, query);
    const jsonBody = await asJson.json();
    assert.ok(jsonBody.errors.length > 0);
    assert.equal(jsonBody.data, undefined);

    const asGql = await handler(post({ query }, { accept: gqlResponse }));
    assert.equal(asGql.status, 400, query);
    const gqlBody = await asGql.json();
    assert.ok(gqlBody.errors[0].message);
    assert.equal('data' in gqlBody, false);
  }
  const syntax = await (await handler(post({ query: '{' }))).json();
  assert.deepEqual(syntax.errors[0].locations, [{ line: 1, column: 2 }]);
});

test('a field error keeps partial data with status 200', async () => {
  // Unmasked, to see the resolver's own message (masking has its own tests in features-security).
  const { handler } = setup({ maskErrors: false });
  for (const accept of ['application/json', gqlResponse]) {
    const res = await handler(post({ query: '{ a boom }' }, { accept }));
    assert.equal(res.status, 200, accept);
    assert.deepEqual(await res.json(), {
      errors: [{ message: 'boom', locations: [{ line: 1, column: 5 }], path: ['boom'] }],
      data: { a: 1, boom: null },
    });
  }
});

test('bodies over the limit get 413, whether declared, streamed or under-declared', async () => {
  const { handler } = setup({ maxBodyBytes: 200 });
  const big = JSON.stringify({ query: `{ a }${' '.repeat(300)}` });

  const declared = await handler(post(big));
  assert.equal(declared.status, 413);
  assert.match((await declared.json()).errors[0].message, /200-byte limit/);

  const streamed = await handler(
    new Request(base, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new ReadableStream({
        start(controller) {
          for (let i = 0; i < 10; i++) controller.enqueue(new TextEncoder().encode(' '.repeat(50)));
          controller.close();
        },
      }),
      duplex: 'half',
    } as RequestInit),
  );
  assert.equal(streamed.status, 413);

  // Multi-byte characters: 80 characters, 240 bytes.
  const wide = await handler(post({ query: `{ a } # ${'€'.repeat(80)}` }, { 'content-length': '50' }));
  assert.equal(wide.status, 413);

  const smallStream = await handler(
    new Request(base, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('{"query":'));
          controller.enqueue(new TextEncoder().encode('"{ a }"}'));
          controller.close();
        },
      }),
      duplex: 'half',
    } as RequestInit),
  );
  assert.equal(smallStream.status, 200);
  assert.deepEqual(await smallStream.json(), { data: { a: 1 } });

  assert.equal((await handler(post({ query: '{ a }' }))).status, 200);
  assert.equal((await handler(post({ query: '{ a }' }, { 'content-length': 'ten' }))).status, 400);
});

test('parse and validation are cached per query text, in a bounded LRU', async () => {
  let validations = 0;
  const countingRule: ValidationRule = () => {
    validations++;
    return {};
  };
  const { handler } = setup({ validationRules: [countingRule], documentCacheSize: 2 });
  const run = async (query: string) => {
    const res = await handler(post({ query }));
    assert.equal(res.status, 200);
    await res.arrayBuffer();
  };
  await run('{ a }');
  await run('{ a }');
  await handler(get('{ a }')).then((r) => r.arrayBuffer());
  assert.equal(validations, 1, 'the same query text is validated once');
  await run('{ b }');
  await run('{ a }'); // refreshes { a }, so { b } is now the oldest
  await run('{ c }'); // evicts { b }
  assert.equal(validations, 3);
  await run('{ a }');
  assert.equal(validations, 3, '{ a } stayed cached');
  await run('{ b }');
  assert.equal(validations, 4, '{ b } was evicted and is validated again');

  validations = 0;
  const uncached = setup({ validationRules: [countingRule], documentCacheSize: 0 }).handler;
  await uncached(post({ query: '{ a }' }));
  await uncached(post({ query: '{ a }' }));
  assert.equal(validations, 2);
});

test('the context factory receives the web Request; its failure is a bare 500', async () => {
  const errors: unknown[] = [];
  const { handler } = setup({ context: (request: Request) => ({ user: request.headers.get('x-user') }) });
  const res = await handler(post({ query: '{ viewer }' }, { 'x-user': 'ada' }));
  assert.deepEqual(await res.json(), { data: { viewer: 'ada' } });

  const failing = setup({
    context: () => {
      throw new Error('secret detail');
    },
    onInternalError: (error) => errors.push(error),
  }).handler;
  const broken = await failing(post({ query: '{ viewer }' }));
  assert.equal(broken.status, 500);
  const text = await broken.text();
  assert.doesNotMatch(text, /secret/);
  assert.equal(errors.length, 1);

  // With compiled execution too: one call of the factory per request, failing or not.
  let calls = 0;
  const compiled = setup({
    compiledExecution: true,
    context: () => {
      calls++;
      throw new Error('secret detail');
    },
    onInternalError: (error) => errors.push(error),
  }).handler;
  const query = post({ query: '{ viewer }' });
  assert.equal((await compiled(query)).status, 500);
  assert.equal(calls, 1);
  assert.equal(errors.length, 2);
});

test('Response is looked up per request, so a server-installed Response class is used', async () => {
  const { handler } = setup();
  const original = globalThis.Response;
  class InstalledLater extends original {}
  globalThis.Response = InstalledLater;
  try {
    const res = await handler(get('{ a }'));
    assert.ok(res instanceof InstalledLater);
    const missing = await handler(get('{ a }', {}, {}, 'http://localhost/x'));
    assert.ok(missing instanceof InstalledLater);
  } finally {
    globalThis.Response = original;
  }
});

test('bad options are refused when the handler is created', () => {
  assert.throws(() => setup({ maxBodyBytes: 0 }), /maxBodyBytes must be a positive integer/);
  assert.throws(() => setup({ documentCacheSize: -1 }), /documentCacheSize/);
});
