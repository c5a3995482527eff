// Cancellation and the time bound: a resolver that would keep running for seconds (each level of
// `next` waits and counts a tick) stops when its client leaves, an execution past `execution.timeoutMs`
// answers a clear error and stops, and a subscription torn down releases its event source.
// graphql-js 16 cannot stop an execution it has started: there only the answer ends at the bound, and
// the @defer/@stream work (our own executor) stops.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GraphQLInt, GraphQLObjectType, GraphQLSchema, GraphQLString, type GraphQLFieldConfig } from 'graphql';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import { graphqlMajor } from '../../src/execution/graphql-compat.ts';
import { startServer } from '../../node/graphql/app.ts';
import { until } from '../fixtures/ws/clients.ts';
import { SSE, StreamRead } from '../fixtures/streams/clients.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A schema whose `tick { next { next ... } }` takes 10 ms a level, counting each. */
function tickingSchema() {
  const state = { ticks: 0, inFlight: 0, subscriptionTicks: 0, subscriptionReturned: false };
  const next: GraphQLFieldConfig<{ n: number }, unknown> = {
    type: GraphQLString,
    resolve: async (tick) => {
      state.inFlight++;
      try {
        await sleep(10);
        state.ticks++;
        return { n: tick.n + 1 };
      } finally {
        state.inFlight--;
      }
    },
  };
  const Tick: GraphQLObjectType = new GraphQLObjectType({ name: 'Tick', fields: () => ({ n: { type: GraphQLInt }, next: { ...next, type: Tick } }) });
  const schema = new GraphQLSchema({
    query: new GraphQLObjectType({
      name: 'Query',
      fields: { tick: { type: Tick, resolve: () => ({ n: 0 }) }, fast: { type: GraphQLString, resolve: () => 'fast' } },
    }),
    subscription: new GraphQLObjectType({
      name: 'Subscription',
      fields: {
        ticks: {
          type: GraphQLInt,
          subscribe: async function* () {
            try {
              for (;;) {
                state.subscriptionTicks++;
                yield state.subscriptionTicks;
                await sleep(10);
              }
            } finally {
              state.subscriptionReturned = true;
            }
          },
          resolve: (value: number) => value,
        },
      },
    }),
  });
  return { schema, state };
}

/** 300 levels: three seconds of ticks unless something stops them. */
const DEEP = `{ tick { ${'n next { '.repeat(300)}n${' }'.repeat(300)} } }`;
const DEEP_DEFERRED = `{ fast ... @defer { tick { ${'n next { '.repeat(300)}n${' }'.repeat(300)} } } }`;

/** Waits for the resolvers in flight to finish, then checks that no new one starts for a while. */
async function assertStopped(state: { ticks: number; inFlight: number }, what: string) {
  await until(() => state.inFlight === 0, 10_000, `${what}: the resolver in flight to finish`);
  const at = state.ticks;
  // Twenty ticks' time: a running execution would have counted some by then.
  await sleep(200);
  await until(() => state.inFlight === 0, 10_000, `${what}: the resolver in flight to finish`);
  assert.equal(state.ticks, at, `${what}: resolvers kept running (${at} ticks, then ${state.ticks})`);
  assert.ok(at < 300, `${what}: it ran to the end (${at} ticks)`);
}

const post = (url: string, query: string, accept: string, signal?: AbortSignal) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept }, body: JSON.stringify({ query }), signal });

describe('execution bounds', () => {
  it('an execution past execution.timeoutMs answers a clear error and stops resolving', async () => {
    const { schema, state } = tickingSchema();
    const handler = createGraphQLHandler({ schema, limits: false, execution: { timeoutMs: 150 } });
    const response = await handler(
      new Request('http://localhost/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: DEEP }) }),
    );
    const body = JSON.parse(await response.text());
    assert.deepEqual(body, { data: null, errors: [{ message: 'The operation did not complete within 150 ms.', extensions: { code: 'EXECUTION_TIMEOUT' } }] });
    assert.ok(state.ticks > 0, 'it had started');
    if (graphqlMajor >= 17) await assertStopped(state, 'graphql-js 17 with the timeout');
  });

  it('@defer work past the time bound ends the stream with the error and stops (graphql 16 and 17)', async () => {
    const { schema, state } = tickingSchema();
    const handler = createGraphQLHandler({ schema, limits: false, incrementalDelivery: true, execution: { timeoutMs: 150 } });
    const response = await handler(
      new Request('http://localhost/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'multipart/mixed' },
        body: JSON.stringify({ query: DEEP_DEFERRED }),
      }),
    );
    const text = await response.text();
    assert.match(text, /"data":\{"fast":"fast"\}/);
    assert.match(text, /The operation did not complete within 150 ms\./);
    await assertStopped(state, 'the incremental executor with the timeout');
  });

  for (const [name, query, accept, stops] of [
    ['graphql-js', DEEP, 'application/json', graphqlMajor >= 17],
    ['the incremental executor', DEEP_DEFERRED, 'multipart/mixed', true],
  ] as const) {
    it(`a client that leaves stops ${name}${stops ? '' : ' (graphql-js 16: only its answer)'}`, async () => {
      const { schema, state } = tickingSchema();
      const server = await startServer({
        handler: createGraphQLHandler({ schema, limits: false, incrementalDelivery: true }),
        port: 0,
        hostname: '127.0.0.1',
      });
      try {
        const client = new AbortController();
        const answer = post(server.url, query, accept, client.signal).then((r) => r.text());
        answer.catch(() => {});
        await until(() => state.ticks >= 3, 10_000, 'a few ticks');
        client.abort();
        await assert.rejects(answer);
        if (stops) await assertStopped(state, name);
      } finally {
        await server.close();
      }
    });
  }

  // On Node two paths end it, the socket's close (stream-responses.ts) and the request's signal: with
  // either one removed this still passes; with both (and the body's cancel) the source is never returned.
  it('a subscription torn down releases its event source', async () => {
    const { schema, state } = tickingSchema();
    const server = await startServer({ handler: createGraphQLHandler({ schema }), port: 0, hostname: '127.0.0.1' });
    try {
      const read = await StreamRead.open(server.url, { query: 'subscription { ticks }', accept: SSE });
      await read.waitFor((r) => r.results().length >= 3, 10_000, 'three events');
      read.abort();
      await until(() => state.subscriptionReturned, 10_000, 'the subscription source to be returned');
      const at = state.subscriptionTicks;
      await sleep(100);
      assert.equal(state.subscriptionTicks, at, 'the source kept producing');
    } finally {
      await server.close();
    }
  });

  it('refuses a time bound that is not a positive number', () => {
    const { schema } = tickingSchema();
    assert.throws(() => createGraphQLHandler({ schema, execution: { timeoutMs: 0 } }), /execution.timeoutMs must be a positive number/);
  });
});
