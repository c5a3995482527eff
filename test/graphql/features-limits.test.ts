// Request limits (length, tokens, depth, aliases, list sizes) and the introspection switch.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getIntrospectionQuery } from 'graphql';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import { countriesSchema } from '../../src/countries/index.ts';
import { defaultLimits } from '../../src/handler/limits.ts';
import { createReadOnlySchema, getRequest, graphqlResponseJson, postRequest } from '../support/graphql-requests.ts';

const strict = { accept: graphqlResponseJson };

async function limitError(response: Response) {
  assert.equal(response.status, 400);
  const body = await response.json();
  assert.equal(body.data, undefined, 'nothing executed');
  assert.equal(body.errors.length, 1, JSON.stringify(body));
  return body.errors[0];
}

test('the defaults let real queries through, introspection (GraphiQL) included', async () => {
  const handler = createGraphQLHandler({ schema: countriesSchema });
  const res = await handler(postRequest({ query: getIntrospectionQuery({ descriptions: true, inputValueDeprecation: true }) }, strict));
  assert.equal(res.status, 200);
  assert.ok((await res.json()).data.__schema.types.length > 10);
  const deep = '{ continent(code: "EU") { countries { continent { countries { languages { name } states { name } } } } } }';
  assert.equal((await handler(getRequest({ query: deep }, strict))).status, 200);
});

test('maxQueryLength: a longer query is 400 before parsing, whatever the media type', async () => {
  const handler = createGraphQLHandler({ schema: countriesSchema, limits: { maxQueryLength: 50 } });
  const query = `{ country(code: "BR") { name ${' '.repeat(40)} } }`;
  for (const accept of [graphqlResponseJson, 'application/json']) {
    const res = await handler(postRequest({ query }, { accept }));
    assert.equal(res.status, 400);
    const { errors } = await res.json();
    assert.match(errors[0].message, /Query is \d+ characters long: the limit is 50 \(limits\.maxQueryLength\)/);
  }
  assert.equal((await handler(getRequest({ query: '{ country(code: "BR") { name } }' }))).status, 200);
  assert.equal(defaultLimits.maxQueryLength, 10_000);
});

test('maxTokens: parsing stops past the limit', async () => {
  const handler = createGraphQLHandler({ schema: countriesSchema, limits: { maxTokens: 20 } });
  const fields = Array.from({ length: 20 }, () => 'code').join(' ');
  const error = await limitError(await handler(postRequest({ query: `{ country(code: "BR") { ${fields} } }` }, strict)));
  assert.equal(error.message, 'Query has more than 20 tokens: the limit is 20 (limits.maxTokens)');
  assert.equal(error.extensions.limit, 'maxTokens');
  assert.equal((await handler(postRequest({ query: '{ country(code: "BR") { code } }' }, strict))).status, 200);
});

test('maxDepth: counted through fragments and inline fragments, introspection not counted', async () => {
  const handler = createGraphQLHandler({ schema: countriesSchema, limits: { maxDepth: 3 } });
  // country > continent > countries > code = 4 levels, the last hidden in a fragment.
  const viaFragment = 'query Deep { country(code: "BR") { continent { ...C } } } fragment C on Continent { countries { code } }';
  const error = await limitError(await handler(postRequest({ query: viaFragment }, strict)));
  assert.equal(error.message, 'Operation "Deep" nests fields 4 deep: the limit is 3 (limits.maxDepth)');
  assert.deepEqual(error.extensions, { code: 'LIMIT_EXCEEDED', limit: 'maxDepth', max: 3, actual: 4 });
  const inline = '{ country(code: "BR") { ... on Country { continent { countries { code } } } } }';
  assert.match((await limitError(await handler(postRequest({ query: inline }, strict)))).message, /4 deep/);
  assert.equal((await handler(postRequest({ query: '{ country(code: "BR") { continent { name } } }' }, strict))).status, 200);
  assert.equal((await handler(postRequest({ query: '{ __schema { types { fields { type { ofType { name } } } } } }' }, strict))).status, 200);
  // Many spreads of spreads are measured once per fragment (this would take 2^30 steps otherwise).
  const chain = Array.from({ length: 30 }, (_, i) => `fragment F${i} on Country { ${i === 29 ? 'code' : `...F${i + 1} ...F${i + 1}`} }`);
  const bomb = `{ country(code: "BR") { ...F0 } } ${chain.join(' ')}`;
  const lenient = createGraphQLHandler({ schema: countriesSchema, limits: { maxDepth: 3, maxTokens: 5000 } });
  assert.equal((await lenient(postRequest({ query: bomb }, strict))).status, 200);
});

test('maxAliases: counted across the document', async () => {
  const handler = createGraphQLHandler({ schema: countriesSchema, limits: { maxAliases: 2 } });
  const query = '{ a: country(code: "BR") { code } b: country(code: "FR") { code } c: country(code: "JP") { n: name } }';
  const error = await limitError(await handler(postRequest({ query }, strict)));
  assert.equal(error.message, 'Document uses 4 aliases: the limit is 2 (limits.maxAliases)');
  assert.equal(error.extensions.limit, 'maxAliases');
  assert.equal((await handler(postRequest({ query: '{ a: country(code: "BR") { code } b: country(code: "FR") { code } }' }, strict))).status, 200);
});

test('maxListSize: inline list arguments and lists in variables', async () => {
  const { schema } = createReadOnlySchema();
  const handler = createGraphQLHandler({ schema, limits: { maxListSize: 3 } });
  const inline = await limitError(await handler(postRequest({ query: '{ sum(values: [1, 2, 3, 4]) }' }, strict)));
  assert.equal(inline.message, 'A list argument has 4 items: the limit is 3 (limits.maxListSize)');
  for (const accept of [graphqlResponseJson, 'application/json']) {
    const viaVariables = await handler(postRequest({ query: 'query($v: [Int!]) { sum(values: $v) }', variables: { v: [1, 2, 3, 4] } }, { accept }));
    assert.equal(viaVariables.status, 400);
    assert.equal((await viaVariables.json()).errors[0].message, 'A list in "variables" has 4 items: the limit is 3 (limits.maxListSize)');
  }
  const ok = await handler(postRequest({ query: 'query($v: [Int!]) { sum(values: $v) }', variables: { v: [1, 2, 3] } }, strict));
  assert.deepEqual(await ok.json(), { data: { sum: 6 } });
  // The countries filter's `in` lists are bounded the same way.
  const countries = createGraphQLHandler({ schema: countriesSchema, limits: { maxListSize: 2 } });
  const codes = await limitError(await countries(postRequest({ query: '{ countries(filter: { code: { in: ["BR", "FR", "JP"] } }) { code } }' }, strict)));
  assert.equal(codes.extensions.limit, 'maxListSize');
});

test('limits: false lifts every limit; bad limit values are refused at creation', async () => {
  const handler = createGraphQLHandler({ schema: countriesSchema, limits: false });
  const aliases = Array.from({ length: 50 }, (_, i) => `a${i}: country(code: "BR") { code }`).join(' ');
  assert.equal((await handler(postRequest({ query: `{ ${aliases} }` }, strict))).status, 200);
  assert.throws(() => createGraphQLHandler({ schema: countriesSchema, limits: { maxDepth: 0 } }), /limits\.maxDepth must be a positive integer/);
});

test('introspection: false refuses __schema and __type but keeps __typename', async () => {
  const handler = createGraphQLHandler({ schema: countriesSchema, introspection: false });
  const res = await handler(postRequest({ query: '{ __schema { queryType { name } } }' }, strict));
  assert.equal(res.status, 400);
  assert.match((await res.json()).errors[0].message, /introspection/i);
  assert.equal((await handler(postRequest({ query: '{ __type(name: "Country") { name } }' }, strict))).status, 400);
  assert.deepEqual(await (await handler(postRequest({ query: '{ __typename }' }, strict))).json(), { data: { __typename: 'Query' } });
  const open = createGraphQLHandler({ schema: countriesSchema });
  assert.equal((await open(postRequest({ query: '{ __schema { queryType { name } } }' }, strict))).status, 200);
});
