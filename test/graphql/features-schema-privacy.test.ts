// With introspection off no error names what the schema has: graphql-js's "Did you mean …?" is left
// out of validation, variable-coercion and enum errors, whichever executor answers, and GraphQL over
// WebSocket refuses introspection and leaves suggestions out of its validation errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { serve } from '@hono/node-server';
import { GraphQLEnumType, GraphQLInputObjectType, GraphQLList, GraphQLNonNull, GraphQLObjectType, GraphQLSchema, GraphQLString } from 'graphql';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import { createCountriesHandler } from '../../src/countries-endpoint.ts';
import { withoutSuggestions } from '../../src/handler/suggestions.ts';
import { createApp } from '../../node/graphql/app.ts';
import { attachGraphQLWebSocket } from '../../node/graphql/websocket.ts';
import { getRequest, graphqlResponseJson, postRequest } from '../support/graphql-requests.ts';
import { RecordedSubscription, graphqlWsClient, within } from '../fixtures/ws/clients.ts';

const Color = new GraphQLEnumType({ name: 'Color', values: { RED: {}, GREEN: {}, BLUE: {} } });
const PaintInput = new GraphQLInputObjectType({
  name: 'PaintInput',
  fields: { color: { type: new GraphQLNonNull(Color) }, finish: { type: GraphQLString } },
});
const schema = new GraphQLSchema({
  query: new GraphQLObjectType({
    name: 'Query',
    fields: {
      paint: {
        type: new GraphQLList(GraphQLString),
        args: { input: { type: PaintInput }, shade: { type: Color } },
        resolve: (_root, args: { input?: { color: string }; shade?: string }) => [args.input?.color ?? args.shade ?? 'none'],
      },
      secretField: { type: GraphQLString, resolve: () => 'hidden' },
    },
  }),
  subscription: new GraphQLObjectType({
    name: 'Subscription',
    fields: {
      tick: {
        type: GraphQLString,
        args: { shade: { type: Color } },
        subscribe: async function* () {
          yield { tick: 'once' };
        },
      },
    },
  }),
});

/** Requests whose errors graphql-js decorates with suggestions, each with what it would suggest. */
const leaky: { name: string; body: Record<string, unknown>; leaks: RegExp }[] = [
  { name: 'unknown field', body: { query: '{ secretFeld }' }, leaks: /secretField/ },
  { name: 'unknown argument', body: { query: '{ paint(shad: RED) }' }, leaks: /"shade"/ },
  { name: 'unknown type', body: { query: 'query ($i: PaintInpt) { paint(input: $i) }' }, leaks: /"PaintInput"/ },
  { name: 'unknown input field', body: { query: '{ paint(input: { color: RED, finsh: "matte" }) }' }, leaks: /"finish"/ },
  { name: 'enum literal', body: { query: '{ paint(shade: REDD) }' }, leaks: /"RED"/ },
  {
    name: 'variable with an unknown input field',
    body: { query: 'query ($i: PaintInput) { paint(input: $i) }', variables: { i: { color: 'RED', finsh: 'matte' } } },
    leaks: /"finish"/,
  },
  {
    name: 'variable with an unknown enum value',
    body: { query: 'query ($c: Color) { paint(shade: $c) }', variables: { c: 'GREN' } },
    leaks: /"GREEN"/,
  },
];

/** The error messages of a response, one per line. */
async function messagesOf(response: Response): Promise<string> {
  const { errors = [] } = (await response.json()) as { errors?: { message: string }[] };
  return errors.map((error) => error.message).join('\n');
}

test('introspection on: graphql-js suggests names (the leak the switch closes)', async () => {
  const handler = createGraphQLHandler({ schema });
  for (const { name, body, leaks } of leaky) {
    const text = await messagesOf(await handler(postRequest(body)));
    assert.match(text, /Did you mean/, name);
    assert.match(text, leaks, name);
  }
});

test('introspection off: no error suggests a name, over POST and GET, under both media types', async () => {
  const handler = createGraphQLHandler({ schema, introspection: false });
  for (const { name, body, leaks } of leaky) {
    for (const accept of ['application/json', graphqlResponseJson]) {
      for (const request of [postRequest(body, { accept }), getRequest(body as { query: string }, { accept })]) {
        const text = await messagesOf(await handler(request));
        assert.notEqual(text, '', `${name}: still an error`);
        assert.doesNotMatch(text, /Did you mean/, `${name} (${request.method}, ${accept}): ${text}`);
        assert.doesNotMatch(text, leaks, `${name} (${request.method}, ${accept}): ${text}`);
      }
    }
  }
});

test('introspection off on the countries API: the compiled plan and graphql-js both leave suggestions out', async () => {
  const handler = createCountriesHandler({ introspection: false });
  const query = 'query ($f: CountryFilterInput) { countries(filter: $f) { code } }';
  // The same document several times: the compiled plan takes over once it has run twice.
  for (let round = 0; round < 5; round++) {
    const text = await messagesOf(await handler(postRequest({ query, variables: { f: { cod: { eq: 'BR' } } } })));
    // graphql 16 and 17 word it differently; both name the field sent and the type.
    assert.match(text, /"cod".*"CountryFilterInput"|"CountryFilterInput".*"cod"/, text);
    assert.doesNotMatch(text, /Did you mean|"code"/, text);
    // A valid call of the same document still answers.
    const ok = await handler(postRequest({ query, variables: { f: { code: { eq: 'BR' } } } }));
    assert.deepEqual(await ok.json(), { data: { countries: [{ code: 'BR' }] } });
  }
  const typo = await handler(postRequest({ query: '{ contry(code: "BR") { name } }' }));
  assert.deepEqual(await typo.json(), {
    errors: [{ message: 'Cannot query field "contry" on type "Query".', locations: [{ line: 1, column: 3 }] }],
  });
});

test('suggestions are removed in the shapes graphql 16 and 17 write them', () => {
  const cases: [string, string][] = [
    ['Cannot query field "secretFeld" on type "Query". Did you mean "secretField"?', 'Cannot query field "secretFeld" on type "Query".'],
    ['Unknown argument "shad" on field "Query.paint". Did you mean "shade" or "shape"?', 'Unknown argument "shad" on field "Query.paint".'],
    ['Unknown type "X". Did you mean "A", "B", or "C"?', 'Unknown type "X".'],
    ['Value "REDD" does not exist in "Color" enum. Did you mean the enum value "RED"?', 'Value "REDD" does not exist in "Color" enum.'],
    ['Cannot query field "a" on type "I". Did you mean to use an inline fragment on "T"?', 'Cannot query field "a" on type "I".'],
    // graphql 17: the suggestion sits mid-sentence, before what was found.
    [
      'Variable "$i" has invalid value: Expected value of type "PaintInput" not to include unknown field "finsh". Did you mean "finish"? Found: { finsh: "matte" }.',
      'Variable "$i" has invalid value: Expected value of type "PaintInput" not to include unknown field "finsh", found: { finsh: "matte" }.',
    ],
    ['Nothing to hide here.', 'Nothing to hide here.'],
  ];
  for (const [message, expected] of cases) assert.equal(withoutSuggestions(message), expected);
});

test('GraphQL over WebSocket with introspection: false refuses __schema and suggests nothing, variables included', async () => {
  const server = serve({ fetch: createApp(createGraphQLHandler({ schema })).fetch, port: 0, hostname: '127.0.0.1' }) as Server;
  await within(new Promise((resolve) => server.once('listening', resolve)), 5000, 'the server to listen');
  const ws = attachGraphQLWebSocket(server, { schema, introspection: false });
  const client = graphqlWsClient(`ws://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`);
  try {
    // A refusal comes as graphql-ws's `error` message; a variable that fails coercion as a result with errors.
    const messages = async (query: string, variables?: Record<string, unknown>) => {
      const operation = new RecordedSubscription(client, query, variables);
      await operation.settled(5000);
      const errors = [...((operation.error as { message: string }[] | undefined) ?? []), ...operation.results.flatMap((r) => r.errors ?? [])];
      return errors.map((error) => error.message).join('\n');
    };
    assert.match(await messages('{ __schema { queryType { name } } }'), /introspection/i);
    const subscription = {
      name: 'subscription variable with an unknown enum value',
      body: { query: 'subscription ($c: Color) { tick(shade: $c) }', variables: { c: 'GREN' } },
      leaks: /"GREEN"/,
    };
    for (const { name, body, leaks } of [...leaky, subscription]) {
      const text = await messages(body.query as string, body.variables as Record<string, unknown> | undefined);
      assert.notEqual(text, '', `${name}: still an error`);
      assert.doesNotMatch(text, /Did you mean/, `${name}: ${text}`);
      assert.doesNotMatch(text, leaks, `${name}: ${text}`);
    }
  } finally {
    await client.dispose();
    await ws.close();
    await new Promise((resolve) => server.close(resolve));
  }
});

test('GraphQL over WebSocket: an onSubscribe that returns nothing keeps introspection off and suggestions out', async () => {
  const server = serve({ fetch: createApp(createGraphQLHandler({ schema })).fetch, port: 0, hostname: '127.0.0.1' }) as Server;
  await within(new Promise((resolve) => server.once('listening', resolve)), 5000, 'the server to listen');
  let seen = 0;
  // An authentication-only hook, as apps write them: it checks and returns nothing.
  const ws = attachGraphQLWebSocket(server, { schema, introspection: false, onSubscribe: () => void seen++ });
  const client = graphqlWsClient(`ws://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`);
  try {
    const messages = async (query: string) => {
      const operation = new RecordedSubscription(client, query);
      await operation.settled(5000);
      return JSON.stringify([operation.error, operation.results]);
    };
    const schemaAnswer = await messages('{ __schema { queryType { name } } }');
    assert.match(schemaAnswer, /introspection/i);
    assert.doesNotMatch(schemaAnswer, /"queryType"/);
    const typo = await messages('{ secretFeld }');
    assert.match(typo, /Cannot query field \\"secretFeld\\"/);
    assert.doesNotMatch(typo, /Did you mean|secretField/);
    assert.equal(seen, 2, 'the hook ran for each operation');
  } finally {
    await client.dispose();
    await ws.close();
    await new Promise((resolve) => server.close(resolve));
  }
});
