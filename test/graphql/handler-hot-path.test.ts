// The handler's hot path: the synchronous `fetch` form, the memos in front of parsing and the
// document cache's cheap hits, each checked against what it stands in for.
import { graphqlMajor } from '../../src/execution/graphql-compat.ts';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'graphql';
import { createCountriesHandler } from '../../src/index.ts';
import { BoundedMemo } from '../../src/handler/bounded-memo.ts';
import { createDocumentCache } from '../../src/handler/document-cache.ts';

const Q1 = '{ country(code:"BR"){ name capital currency languages{ name } } }';
const getUrl = (query: string, extra = '') => `http://localhost/graphql?query=${encodeURIComponent(query)}${extra}`;
const post = (body: string) => new Request('http://localhost/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body });

test('handler.fetch answers a cached GET without a promise, with the same response as the handler', async () => {
  const handler = createCountriesHandler();
  const viaPromise = await handler(new Request(getUrl(Q1)));
  const direct = handler.fetch(new Request(getUrl(Q1)));
  assert.ok(!(direct instanceof Promise), 'a cached valid GET is answered synchronously');
  assert.equal(direct.status, 200);
  assert.deepEqual([...direct.headers], [...viaPromise.headers]);
  assert.equal(await direct.text(), await viaPromise.text());

  // What has to wait still comes back as a promise, and the public call is always one.
  assert.ok(handler.fetch(post(JSON.stringify({ query: Q1 }))) instanceof Promise, 'a POST body is awaited');
  assert.ok(handler(new Request(getUrl(Q1))) instanceof Promise);
  // Errors over GET need no waiting either, and keep their status on either form.
  const strict = { accept: 'application/graphql-response+json' };
  const invalid = handler.fetch(new Request(getUrl('{ nope }'), { headers: strict }));
  assert.ok(!(invalid instanceof Promise), 'a GET failing validation is answered synchronously');
  assert.equal(invalid.status, 400);
  assert.equal(invalid.status, (await handler(new Request(getUrl('{ nope }'), { headers: strict }))).status);
  assert.match(JSON.parse(await invalid.text()).errors[0].message, /Cannot query field "nope"/);
  const mutation = await handler.fetch(new Request(getUrl('mutation { x }')));
  if (graphqlMajor >= 17) {
    // graphql-js 17 validates operation types (KnownOperationTypesRule): the schema has no mutations.
    assert.equal(mutation.status, 200);
    assert.match(JSON.parse(await mutation.text()).errors[0].message, /mutation operation is not supported by the schema/);
  } else assert.equal(mutation.status, 405);
  const missing = handler.fetch(new Request('http://localhost/elsewhere'));
  assert.ok(!(missing instanceof Promise));
  assert.equal(missing.status, 404);
});

test('remembered query strings and bodies answer exactly like fresh ones', async () => {
  const handler = createCountriesHandler();
  const answers = async (request: () => Request) => {
    const first = await handler(request());
    const again = await handler(request());
    return [first.status, await first.text(), again.status, await again.text()];
  };
  const withName = JSON.stringify({ query: 'query A { country(code:"FR"){ name } } query B { country(code:"DE"){ name } }', operationName: 'B' });
  const [s1, b1, s2, b2] = await answers(() => post(withName));
  assert.deepEqual([s1, s2], [200, 200]);
  assert.equal(b1, '{"data":{"country":{"name":"Germany"}}}');
  assert.equal(b2, b1);
  // Same query text, other parameters: nothing is mixed up between them.
  const otherName = withName.replace('"B"', '"A"');
  assert.equal(await (await handler(post(otherName))).text(), '{"data":{"country":{"name":"France"}}}');
  const withVariables = JSON.stringify({ query: 'query ($c: ID!) { country(code: $c) { code } }', variables: { c: 'JP' } });
  assert.equal(await (await handler(post(withVariables))).text(), '{"data":{"country":{"code":"JP"}}}');
  assert.equal(await (await handler(post(withVariables.replace('JP', 'KR')))).text(), '{"data":{"country":{"code":"KR"}}}');
  // A body that failed once fails again the same way.
  const [bad1, text1, bad2, text2] = await answers(() => post('{"query": 42}'));
  assert.deepEqual([bad1, bad2], [400, 400]);
  assert.equal(text2, text1);
  // GET: the decoded parameters of a remembered query string, then the same string with variables.
  const get1 = await answers(() => new Request(getUrl('query ($c: ID!) { country(code: $c) { code } }', '&variables=%7B%22c%22%3A%22NO%22%7D')));
  assert.deepEqual(get1, [200, '{"data":{"country":{"code":"NO"}}}', 200, '{"data":{"country":{"code":"NO"}}}']);
});

test("a remembered body's or query string's variables are each request's own copy", async () => {
  // A context factory that changes the variables it is given (a hook may; the query does not read
  // what it changes): the next request with the same bytes must still see what its client sent.
  const seen: unknown[] = [];
  const handler = createCountriesHandler({
    context: (_request, params) => {
      seen.push(structuredClone(params.variables));
      const variables = params.variables as { list: unknown[]; added?: boolean };
      variables.list.push('changed');
      (variables.list[0] as { a: number }).a = 2;
      variables.added = true;
      return undefined;
    },
  });
  const query = 'query ($c: ID!) { country(code: $c) { code } }';
  const variables = JSON.parse('{"c":"JP","list":[{"a":1}],"__proto__":{"polluted":true}}');
  const body = JSON.stringify({ query, variables });
  const url = getUrl(query, `&variables=${encodeURIComponent(JSON.stringify(variables))}`);
  for (const request of [() => post(body), () => new Request(url)]) {
    seen.length = 0;
    for (let i = 0; i < 4; i++) assert.equal(await (await handler(request())).text(), '{"data":{"country":{"code":"JP"}}}');
    assert.equal(seen.length, 4, 'kept from the second time, answered from the memo after');
    for (const sent of seen) {
      assert.deepEqual(sent, variables);
      assert.equal(Object.getPrototypeOf(sent), Object.prototype, 'an own "__proto__" stays a field, not a prototype');
    }
  }
});

test('variables nested deeper than a copy walks are parsed every time, with the same answer', async () => {
  const handler = createCountriesHandler();
  const query = 'query ($c: ID!) { country(code: $c) { code } }';
  for (const depth of [63, 65, 50_000]) {
    const body = `{"query":${JSON.stringify(query)},"variables":{"c":"JP","deep":${'['.repeat(depth)}1${']'.repeat(depth)}}}`;
    const url = getUrl(query, `&variables=${encodeURIComponent(body.slice(body.indexOf('"variables":') + 12, -1))}`);
    for (const request of [() => post(body), () => new Request(url)]) {
      for (let i = 0; i < 4; i++) {
        const response = await handler(request());
        assert.equal(await response.text(), '{"data":{"country":{"code":"JP"}}}', `${depth} deep, request ${i + 1}`);
      }
    }
  }
});

test('BoundedMemo keeps what is used and drops the older generation when its budget is spent', () => {
  const memo = new BoundedMemo<number>(10);
  memo.set('aaaa', 1);
  memo.set('bbbb', 2);
  assert.equal(memo.get('aaaa'), 1);
  memo.set('cccc', 3); // 12 characters: a new generation starts with cccc; aaaa and bbbb are the older one
  assert.equal(memo.get('bbbb'), 2, 'the older generation still answers, and the hit moves it forward');
  memo.set('dddd', 4);
  memo.set('eeee', 5); // another generation: aaaa was not used during the last one
  assert.equal(memo.get('aaaa'), undefined);
  assert.equal(memo.get('eeee'), 5);
  memo.set('x'.repeat(11), 6);
  assert.equal(memo.get('x'.repeat(11)), undefined, 'a key over the whole budget is not kept');
});

test('the document cache never evicts a query used within the last half of its size', () => {
  const size = 8;
  const cache = createDocumentCache(size);
  const queries = Array.from({ length: 20 }, (_, i) => `{ f${i} }`);
  const documents = new Map<string, unknown>();
  const history: string[] = [];
  let misses = 0;
  let seed = 7;
  for (let step = 0; step < 5000; step++) {
    seed = (seed + 0x6d2b79f5) | 0; // mulberry32
    let r = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    const random = ((r ^ (r >>> 14)) >>> 0) / 4294967296;
    // Mostly a small working set (6 queries), sometimes anything.
    const query = queries[random < 0.8 ? Math.floor(random * 7.5) : Math.floor(random * 100) % queries.length];
    const document = cache.parse(query);
    assert.deepEqual(document, parse(query));
    if (documents.get(query) !== document) {
      misses++;
      const recent = history.slice(-(size >> 1));
      if (documents.has(query)) assert.ok(!recent.includes(query), `step ${step}: ${query} was evicted though used recently`);
      documents.set(query, document);
    }
    history.push(query);
    assert.ok(cache.size <= size);
  }
  assert.ok(misses < 2500, `the working set stays cached (${misses} misses)`);
});

test('a POST body that fails while being read is a 400 naming the failure, with or without Content-Length', async () => {
  const handler = createCountriesHandler();
  for (const length of ['10', null]) {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (length !== null) headers['content-length'] = length;
    const failing = new ReadableStream({
      pull(controller) {
        controller.error(new Error('connection reset'));
      },
    });
    const request = new Request('http://localhost/graphql', { method: 'POST', headers, body: failing, duplex: 'half' } as RequestInit);
    const response = await handler.fetch(request);
    assert.equal(response.status, 400, `Content-Length ${length}`);
    assert.deepEqual(await response.json(), { errors: [{ message: 'Could not read the request body: connection reset' }] });
  }
});
