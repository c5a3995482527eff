// GraphQL subscriptions over SSE and multipart in a stateless workerd Worker. There, a stream belongs
// to its own request: workerd runs none of a request's work once its client has left and lets no other
// request's event reach it, so a Worker streams subscriptions whose events come from the request itself
// (here a countdown on timers). Fan-out from mutations goes through a Durable Object
// (streams-workerd-durable-object.test.ts).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { RecordedSubscription, within } from '../fixtures/ws/clients.ts';
import { serveOnWorkerd } from '../fixtures/ws/runtimes.ts';
import { APOLLO_MULTIPART, MULTIPART, SSE, StreamRead, sseClient } from '../fixtures/streams/clients.ts';

const COUNTDOWN = 'subscription ($from: Int!) { countdown(from: $from) }';

describe('GraphQL subscriptions over HTTP streams in a stateless workerd Worker', () => {
  let worker: { origin: string; close(): Promise<void> };
  let url: string;
  before(async () => {
    worker = await serveOnWorkerd('test/fixtures/streams/countdown-worker.ts');
    url = `${worker.origin}/graphql`;
  });
  after(async () => {
    await worker?.close();
  });

  it('streams every event in order to the graphql-sse client, then completes', async () => {
    const client = sseClient(url);
    try {
      const subscription = new RecordedSubscription(client, COUNTDOWN, { from: 5 });
      const seen = [];
      for (let i = 0; i < 6; i++) seen.push((await subscription.next(10_000)).data?.countdown);
      assert.deepEqual(seen, [5, 4, 3, 2, 1, 0]);
      await subscription.settled(10_000);
      assert.equal(subscription.completed, true, `completed, no error (${String(subscription.error)})`);
    } finally {
      client.dispose();
    }
  });

  it('streams it as multipart parts, with subscriptionSpec=1.0 and without', async () => {
    const apollo = await StreamRead.open(url, { query: COUNTDOWN, variables: { from: 3 }, accept: APOLLO_MULTIPART });
    await apollo.finished();
    assert.deepEqual(
      apollo.results().map((part) => (part as { payload?: { data?: { countdown?: number } } }).payload?.data?.countdown),
      [undefined, 3, 2, 1, 0],
      'a heartbeat, then each event',
    );
    assert.ok(apollo.completed);
    const mixed = await StreamRead.open(url, { query: COUNTDOWN, variables: { from: 2 }, accept: MULTIPART });
    await mixed.finished();
    assert.deepEqual(
      mixed.results().map((part) => (part as { data?: { countdown?: number } }).data?.countdown),
      [2, 1, 0],
    );
    assert.ok(mixed.completed);
  });

  it('answers queries to a stream-only client, and keeps serving after a client leaves mid-stream', async () => {
    const leaving = await StreamRead.open(url, { query: 'subscription { countdown(from: 1000, everyMs: 10) }', accept: SSE });
    await leaving.waitFor((read) => read.results().length >= 2, 10_000, 'two events');
    leaving.abort();
    const query = await within(StreamRead.open(url, { query: '{ hello }', accept: SSE }), 10_000, 'a query after the abort');
    await query.finished();
    assert.deepEqual(query.results(), [{ data: { hello: 'world' } }]);
    assert.ok(query.completed);
  });
});
