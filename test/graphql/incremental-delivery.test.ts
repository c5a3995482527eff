// @defer and @stream: the countries handler (as `npm start` and the edge bundles build it) and the chat
// example answer them incrementally to clients that accept multipart or SSE, Apollo Client and urql
// among them, and unchanged to clients that ask for JSON.
import { graphqlMajor } from '../../src/execution/graphql-compat.ts';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { Defer20220824Handler, GraphQL17Alpha9Handler } from '@apollo/client/incremental';
import { Client as UrqlClient, fetchExchange } from '@urql/core';
import { GraphQLList, GraphQLNonNull, GraphQLObjectType, GraphQLSchema, GraphQLString } from 'graphql';
import { createCountriesHandler } from '../../src/index.ts';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import { startServer, type RunningServer } from '../../node/graphql/app.ts';
import { startChatServer, type ChatServer } from '../../examples/chat/server.ts';
import { postMessage, until, within } from '../fixtures/ws/clients.ts';
import { MULTIPART, SSE, StreamRead } from '../fixtures/streams/clients.ts';

const DEFER_SPEC = 'multipart/mixed;deferSpec=20220824, application/json';
const INCREMENTAL_SPEC = 'multipart/mixed;incrementalSpec=v0.2, application/json';
const QUERY = '{ country(code: "FR") { name ... @defer(label: "details") { capital languages { name } } } continents @stream(initialCount: 5) { code } }';
const WITHOUT = '{ country(code: "FR") { name capital languages { name } } continents { code } }';

const post = (handler: (request: Request) => Promise<Response>, query: string, accept: string) =>
  handler(
    new Request('http://localhost/graphql', { method: 'POST', headers: { 'content-type': 'application/json', accept }, body: JSON.stringify({ query }) }),
  );

/** The JSON bodies of a multipart/mixed answer, in order. */
function multipartBodies(text: string) {
  return text
    .split('\r\n---')
    .map((part) => part.slice(part.indexOf('\r\n\r\n') + 4))
    .filter((body) => body.startsWith('{'))
    .map((body) => JSON.parse(body));
}

/** The JSON data of the `next` events of an SSE answer, in order. */
function sseBodies(text: string) {
  return text
    .split('\n\n')
    .filter((event) => event.startsWith('event: next'))
    .map((event) => JSON.parse(event.slice(event.indexOf('data: ') + 6)));
}

describe('@defer and @stream', () => {
  it('answers a JSON client with the whole result, as without the directives', async () => {
    const handler = createCountriesHandler();
    const deferred = await post(handler, QUERY, 'application/graphql-response+json, application/json');
    const plain = await post(createCountriesHandler({ incrementalDelivery: false }), WITHOUT, 'application/graphql-response+json, application/json');
    assert.equal(deferred.headers.get('content-type'), plain.headers.get('content-type'));
    assert.equal(await deferred.text(), await plain.text());
  });

  it('streams the fast part first and each increment after it in the 2022 format (deferSpec=20220824), as multipart and as SSE', async () => {
    const handler = createCountriesHandler();
    const multipart = await post(handler, QUERY, DEFER_SPEC);
    assert.equal(multipart.headers.get('content-type'), 'multipart/mixed; boundary="-"; deferSpec=20220824');
    const parts = multipartBodies(await multipart.text());
    assert.deepEqual(parts[0], {
      data: { country: { name: 'France' }, continents: ['AF', 'AN', 'AS', 'EU', 'NA'].map((code) => ({ code })) },
      hasNext: true,
    });
    const increments = parts.slice(1).flatMap((part) => part.incremental);
    assert.deepEqual(
      increments.find((increment) => increment.label === 'details'),
      { data: { capital: 'Paris', languages: [{ name: 'French' }] }, path: ['country'], label: 'details' },
    );
    assert.deepEqual(
      increments.filter((increment) => increment.items).map((increment) => [increment.path, increment.items]),
      [
        [['continents', 5], [{ code: 'OC' }]],
        [['continents', 6], [{ code: 'SA' }]],
      ],
    );
    assert.equal(parts.at(-1).hasNext, false);

    const sse = await post(handler, QUERY, 'text/event-stream;deferSpec=20220824');
    const events = sseBodies(await sse.text());
    assert.deepEqual(events[0], parts[0]);
    assert.ok(events.slice(1).some((event) => event.incremental?.some((entry: { label?: string }) => entry.label === 'details')));
    assert.equal(events.at(-1).hasNext, false);
  });

  it("speaks graphql-js 17's current format (incrementalSpec=v0.2) when asked, and by default, as multipart and as SSE", async () => {
    const handler = createCountriesHandler();
    for (const accept of [INCREMENTAL_SPEC, MULTIPART, SSE, `${SSE};incrementalSpec=v0.2`]) {
      const response = await post(handler, QUERY, accept);
      const sse = accept.startsWith(SSE);
      if (!sse) assert.equal(response.headers.get('content-type'), 'multipart/mixed; boundary="-"; incrementalSpec=v0.2');
      const payloads = sse ? sseBodies(await response.text()) : multipartBodies(await response.text());
      // The fragment and the stream are announced with the first payload, then filled by id and completed.
      assert.deepEqual(payloads[0], {
        data: { country: { name: 'France' }, continents: ['AF', 'AN', 'AS', 'EU', 'NA'].map((code) => ({ code })) },
        pending: [
          { id: '0', path: ['country'], label: 'details' },
          { id: '1', path: ['continents'] },
        ],
        hasNext: true,
      });
      const later = payloads.slice(1);
      assert.deepEqual(
        later.flatMap((payload) => payload.incremental ?? []).sort((a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id)),
        [
          { id: '0', data: { capital: 'Paris', languages: [{ name: 'French' }] } },
          { id: '1', items: [{ code: 'OC' }] },
          { id: '1', items: [{ code: 'SA' }] },
        ],
        accept,
      );
      assert.deepEqual(
        later
          .flatMap((payload) => payload.completed ?? [])
          .map((c: { id: string }) => c.id)
          .sort(),
        ['0', '1'],
      );
      assert.ok(later.every((payload) => payload.pending === undefined && payload.label === undefined && payload.path === undefined));
      assert.equal(payloads.at(-1).hasNext, false);
    }
  });

  it('v0.2: a nested fragment is announced with the payload that holds its parent; a fragment that fails as a whole completes with its errors', async () => {
    const payloads = multipartBodies(
      await (
        await post(
          createCountriesHandler(),
          '{ country(code: "DE") { code ... @defer(label: "outer") { name continent { code ... @defer(label: "inner") { name } } } } }',
          INCREMENTAL_SPEC,
        )
      ).text(),
    );
    assert.deepEqual(payloads[0].pending, [{ id: '0', path: ['country'], label: 'outer' }]);
    const outer = payloads.findIndex((payload) => payload.incremental?.some((entry: { id: string }) => entry.id === '0'));
    assert.ok(outer > 0);
    assert.deepEqual(payloads[outer].pending, [{ id: '1', path: ['country', 'continent'], label: 'inner' }]);
    assert.deepEqual(
      payloads.flatMap((payload) => payload.incremental ?? []),
      [
        { id: '0', data: { name: 'Germany', continent: { code: 'EU' } } },
        { id: '1', data: { name: 'Europe' } },
      ],
    );

    const schema = new GraphQLSchema({
      query: new GraphQLObjectType({
        name: 'Query',
        fields: {
          fast: { type: GraphQLString, resolve: () => 'fast' },
          required: {
            type: new GraphQLNonNull(GraphQLString),
            resolve: () => {
              throw new Error('secret detail');
            },
          },
        },
      }),
    });
    const handler = createGraphQLHandler({ schema, incrementalDelivery: true, onMaskedError: () => {} });
    const failed = multipartBodies(await (await post(handler, '{ fast ... @defer { required } }', INCREMENTAL_SPEC)).text());
    assert.deepEqual(failed[0], { data: { fast: 'fast' }, pending: [{ id: '0', path: [] }], hasNext: true });
    assert.deepEqual(failed.slice(1), [
      { completed: [{ id: '0', errors: [{ message: 'Unexpected error.', locations: [{ line: 1, column: 21 }], path: ['required'] }] }], hasNext: false },
    ]);
  });

  it('masks unexpected errors in increments, and stops the work of a client that leaves', async () => {
    let produced = 0;
    let returned = false;
    const schema = new GraphQLSchema({
      query: new GraphQLObjectType({
        name: 'Query',
        fields: {
          fast: { type: GraphQLString, resolve: () => 'fast' },
          broken: {
            type: GraphQLString,
            resolve: () => {
              throw new Error('secret detail');
            },
          },
          ticks: {
            type: new GraphQLList(GraphQLString),
            resolve: async function* () {
              try {
                for (;;) {
                  produced++;
                  yield `tick ${produced}`;
                  await new Promise((resolve) => setTimeout(resolve, 5));
                }
              } finally {
                returned = true;
              }
            },
          },
        },
      }),
    });
    const handler = createGraphQLHandler({ schema, incrementalDelivery: true, onMaskedError: () => {} });
    const masked = await (await post(handler, '{ fast ... @defer { broken } }', DEFER_SPEC)).text();
    assert.doesNotMatch(masked, /secret detail/);
    assert.match(masked, /"incremental":\[\{"data":\{"broken":null\},"path":\[\],"errors":\[\{"message":"Unexpected error\."/);

    const server = await startServer({ handler, port: 0, hostname: '127.0.0.1' });
    try {
      const read = await StreamRead.open(server.url, { query: '{ fast ticks @stream(initialCount: 1) }', accept: MULTIPART });
      await read.waitFor((r) => r.items.length >= 3, 10_000, 'a few streamed items');
      read.abort();
      // The list's generator was returned (its finally ran): nothing keeps producing for a client that left.
      await until(() => returned, 10_000, 'the list to stop when its client left');
    } finally {
      await server.close();
    }
  });

  describe('with real clients and the chat example', () => {
    let countries: RunningServer;
    let chat: ChatServer;
    before(async () => {
      countries = await startServer({ handler: createCountriesHandler(), port: 0, hostname: '127.0.0.1' });
      chat = await startChatServer({ port: 0, hostname: '127.0.0.1' });
    });
    after(async () => {
      await countries?.close();
      await chat?.close();
    });

    for (const [name, makeHandler] of [
      ['GraphQL17Alpha9Handler (incrementalSpec=v0.2)', () => new GraphQL17Alpha9Handler()],
      ['Defer20220824Handler (deferSpec=20220824)', () => new Defer20220824Handler()],
    ] as const) {
      it(`Apollo Client with its ${name} renders the fast part first, then the deferred one`, async () => {
        const client = new ApolloClient({
          link: new HttpLink({ uri: countries.url }),
          cache: new InMemoryCache(),
          incrementalHandler: makeHandler(),
        });
        const seen: unknown[] = [];
        const query = gql('query Details { country(code: "JP") { code name ... @defer { capital currency } } }');
        const subscription = client.watchQuery({ query }).subscribe((result) => seen.push(result.data));
        try {
          await until(() => (seen.at(-1) as { country?: { capital?: string } } | undefined)?.country?.capital !== undefined, 10_000, 'the deferred fields');
        } finally {
          subscription.unsubscribe();
          client.stop();
        }
        const first = seen.find((data) => (data as { country?: unknown } | undefined)?.country !== undefined) as { country: Record<string, unknown> };
        assert.equal(first.country.name, 'Japan');
        assert.equal(first.country.capital, undefined, 'the first render has no deferred field');
        assert.deepEqual(seen.at(-1), { country: { __typename: 'Country', code: 'JP', name: 'Japan', capital: 'Tokyo', currency: 'JPY' } });
      });

      it(`Apollo Client with its ${name} fills a @stream list item by item`, async () => {
        const client = new ApolloClient({
          link: new HttpLink({ uri: countries.url }),
          cache: new InMemoryCache(),
          incrementalHandler: makeHandler(),
        });
        const seen: { continents?: { code: string }[] }[] = [];
        const query = gql('query Continents { continents @stream(initialCount: 2) { code } }');
        const subscription = client.watchQuery({ query }).subscribe((result) => seen.push(result.data as (typeof seen)[number]));
        try {
          await until(() => seen.at(-1)?.continents?.length === 7, 10_000, 'all seven continents');
        } finally {
          subscription.unsubscribe();
          client.stop();
        }
        assert.deepEqual(
          seen.at(-1)!.continents!.map((continent) => continent.code),
          ['AF', 'AN', 'AS', 'EU', 'NA', 'OC', 'SA'],
        );
        assert.ok(
          seen.some((data) => data?.continents !== undefined && data.continents.length < 7),
          'a render before the last item',
        );
      });
    }

    for (const [name, accept] of [
      ['its own Accept (the current format by default)', undefined],
      ['Accept: deferSpec=20220824', DEFER_SPEC],
    ] as const) {
      it(`urql with ${name} gets the initial result and then the merged one`, async () => {
        const client = new UrqlClient({
          url: countries.url,
          exchanges: [fetchExchange],
          ...(accept && { fetchOptions: { headers: { accept } } }),
        });
        const results: { data?: { country?: Record<string, unknown> }; hasNext?: boolean }[] = [];
        const { unsubscribe } = client.query('{ country(code: "BR") { name ... @defer { capital } } }', {}).subscribe((result) => results.push(result));
        try {
          await until(() => results.some((result) => result.hasNext === false), 10_000, 'the last payload');
        } finally {
          unsubscribe();
        }
        assert.deepEqual(results[0].data, { country: { name: 'Brazil' } });
        assert.deepEqual(results.at(-1)!.data, { country: { name: 'Brazil', capital: 'Brasília' } });
      });
    }

    it('defers fields of each subscription event over SSE (graphql 16; 17 refuses @defer on subscriptions)', async () => {
      const query = 'subscription { messageAdded(room: "deferred") { id ... @defer { author text } } }';
      if (graphqlMajor >= 17) {
        // graphql-js 17 validates as the incremental delivery draft says: no @defer/@stream on a subscription.
        const read = await within(StreamRead.open(chat.url, { query, accept: SSE }), 5000, 'a stream');
        try {
          await read.waitFor((r) => r.results().length >= 1, 10_000, 'the refusal');
          const [refusal] = read.results() as { errors?: { message: string }[] }[];
          assert.match(refusal.errors?.[0]?.message ?? '', /Defer directive not supported on subscription operations/);
        } finally {
          read.abort();
        }
        return;
      }
      const reads = [
        await within(StreamRead.open(chat.url, { query, accept: SSE }), 5000, 'a stream'),
        await StreamRead.open(chat.url, { query, accept: SSE }),
      ];
      try {
        assert.equal((await postMessage(chat.url, 'deferred', 'later', 'ada')).status, 200);
        for (const read of reads) await read.waitFor((r) => r.results().length >= 2, 10_000, 'the event and its increment');
        for (const read of reads) {
          const [initial, increment] = read.results() as { data?: unknown; incremental?: unknown[]; hasNext: boolean }[];
          assert.deepEqual(initial.data, { messageAdded: { id: (initial.data as { messageAdded: { id: string } }).messageAdded.id } });
          assert.equal(initial.hasNext, true);
          assert.deepEqual(increment.incremental, [{ data: { author: 'ada', text: 'later' }, path: ['messageAdded'] }]);
        }
      } finally {
        for (const read of reads) read.abort();
      }
    });
  });
});
