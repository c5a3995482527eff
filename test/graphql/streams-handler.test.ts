// The HTTP stream side of the fetch handler, in-process: which Accept headers open which stream, the
// bound on a client that does not read, masking of event errors, shutdown, options, and the Node
// server's per-address cap.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import { GraphQLObjectType, GraphQLSchema, GraphQLString } from 'graphql';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import { negotiateStreamFormat } from '../../src/streams/stream-formats.ts';
import { createInProcessPubSub } from '../../src/subscriptions/pubsub.ts';
import { createChatSchema, type ChatTopics } from '../../examples/chat/schema.ts';
import { peerAddress, startServer } from '../../node/graphql/app.ts';
import { countingPubSub } from '../fixtures/ws/chat-app.ts';
import { MESSAGE_ADDED, until, within } from '../fixtures/ws/clients.ts';
import { APOLLO_MULTIPART, SSE, StreamRead, rawStreamRequest } from '../fixtures/streams/clients.ts';

const request = (query: string, accept: string, variables?: Record<string, unknown>) =>
  new Request('http://localhost/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept },
    body: JSON.stringify({ query, variables }),
  });

/**
 * A Node server with `handler`, and a raw client subscribed to `room` that reads nothing after its
 * request: the kernel's buffers fill, then the server's. `use` runs once the subscription is live.
 */
async function withDeafClient(
  handler: ReturnType<typeof createGraphQLHandler>,
  pubsub: { live(): number },
  room: string,
  use: () => Promise<void>,
): Promise<void> {
  const server = await startServer({ handler, port: 0, hostname: '127.0.0.1' });
  const socket = connect(server.port, '127.0.0.1');
  try {
    await within(new Promise((resolve) => socket.once('connect', resolve)), 5000, 'the connection');
    socket.write(rawStreamRequest(server.url, JSON.stringify({ query: MESSAGE_ADDED, variables: { room } }), SSE));
    socket.pause();
    await until(() => pubsub.live() === 1, 5000, 'the subscription');
    await use();
  } finally {
    socket.destroy();
    await server.close();
  }
}

describe('HTTP streams in the fetch handler', () => {
  it('opens a stream only for an Accept header that names one', () => {
    assert.equal(negotiateStreamFormat('text/event-stream'), 'event-stream');
    assert.equal(negotiateStreamFormat('multipart/mixed;boundary=graphql;subscriptionSpec=1.0, application/json'), 'multipart-subscription');
    assert.equal(negotiateStreamFormat('multipart/mixed;deferSpec=20220824, application/json'), 'multipart-mixed');
    assert.equal(negotiateStreamFormat('text/event-stream, multipart/mixed'), 'event-stream', 'the first of equal weights');
    assert.equal(negotiateStreamFormat('multipart/mixed;q=0.5, text/event-stream;q=0.9'), 'event-stream', 'the higher weight');
    assert.equal(negotiateStreamFormat('text/event-stream;q=0, application/json'), null, 'q=0 refuses it');
    assert.equal(negotiateStreamFormat('*/*'), null, 'a wildcard never opens a stream');
    assert.equal(negotiateStreamFormat(null), null);
    assert.equal(negotiateStreamFormat('application/graphql-response+json, application/json'), null);
  });

  it('answers queries as JSON to a client that accepts JSON and a stream alike', async () => {
    const handler = createGraphQLHandler({ schema: createChatSchema() });
    const response = await handler(request('{ messages { id } }', APOLLO_MULTIPART));
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.deepEqual(await response.json(), { data: { messages: [] } });
  });

  it('cuts a client that does not read past its buffer, and releases its subscription', async () => {
    const pubsub = countingPubSub(createInProcessPubSub<ChatTopics>());
    const handler = createGraphQLHandler({ schema: createChatSchema({ pubsub }), subscriptions: { maxBufferedBytes: 16 * 1024 } });
    const response = await handler(request(MESSAGE_ADDED, SSE, { room: 'slow' }));
    assert.equal(response.status, 200);
    assert.equal(pubsub.live(), 1);
    const text = 'x'.repeat(1500);
    // Nobody reads the body: 30 events of 1.5 kB are twice the bound.
    for (let i = 0; i < 30 && pubsub.live() > 0; i++) {
      await pubsub.publish('room:slow', { id: String(i), room: 'slow', author: 'a', text, createdAt: new Date().toISOString() });
      await new Promise((resolve) => setImmediate(resolve));
    }
    await until(() => pubsub.live() === 0, 5000, 'the slow reader to be cut and its subscription released');
    assert.deepEqual(handler.subscriptionStats(), { executions: 0, members: 0, open: 0 });
    await assert.rejects(response.text(), /did not read fast enough/);
  });

  it('cuts a client that does not read on the Node server too, where streams go straight to the socket', async () => {
    const pubsub = countingPubSub(createInProcessPubSub<ChatTopics>());
    const handler = createGraphQLHandler({ schema: createChatSchema({ pubsub }), subscriptions: { maxBufferedBytes: 16 * 1024 } });
    await withDeafClient(handler, pubsub, 'deaf', async () => {
      const text = 'x'.repeat(1500);
      for (let i = 0; i < 40_000 && pubsub.live() > 0; i++) {
        await pubsub.publish('room:deaf', { id: String(i), room: 'deaf', author: 'a', text, createdAt: '' });
        if (i % 100 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
      await until(() => pubsub.live() === 0, 5000, 'the deaf client to be cut and its subscription released');
      assert.deepEqual(handler.subscriptionStats(), { executions: 0, members: 0, open: 0 });
    });
  });

  it('cuts a stream whose client takes nothing for sendTimeout, though far under its buffer bound', async () => {
    const pubsub = countingPubSub(createInProcessPubSub<ChatTopics>());
    const handler = createGraphQLHandler({ schema: createChatSchema({ pubsub }), subscriptions: { keepAlive: 50, sendTimeout: 300 } });
    const response = await handler(request(MESSAGE_ADDED, SSE, { room: 'stuck' }));
    assert.equal(response.status, 200);
    assert.equal(pubsub.live(), 1);
    // Nobody reads the body: only the opening comment and a few keep-alives wait, bytes against the 1 MiB bound.
    await until(() => pubsub.live() === 0, 5000, 'the stream nobody reads to be cut and its subscription released');
    assert.deepEqual(handler.subscriptionStats(), { executions: 0, members: 0, open: 0 });
    await assert.rejects(response.text(), /the client took nothing for 300 ms/);
  });

  it('cuts a Node client whose connection takes nothing for sendTimeout, before its buffer bound is reached', async () => {
    const pubsub = countingPubSub(createInProcessPubSub<ChatTopics>());
    const maxBufferedBytes = 64 << 20;
    const handler = createGraphQLHandler({ schema: createChatSchema({ pubsub }), subscriptions: { keepAlive: 100, sendTimeout: 400, maxBufferedBytes } });
    await withDeafClient(handler, pubsub, 'stalled', async () => {
      // Events until the kernel's buffers are full and bytes wait in the server, paced so that the
      // stall can be seen; never as many bytes as the buffer bound, so only the stall can cut it.
      const text = 'x'.repeat(1500);
      let published = 0;
      while (pubsub.live() > 0 && published < maxBufferedBytes * 0.75) {
        for (let i = 0; i < 100; i++) await pubsub.publish('room:stalled', { id: String(i), room: 'stalled', author: 'a', text, createdAt: '' });
        published += 100 * text.length;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await until(() => pubsub.live() === 0, 5000, 'the stalled client to be cut and its subscription released');
      assert.ok(published < maxBufferedBytes, `cut after ${published} bytes, under the buffer bound`);
      assert.deepEqual(handler.subscriptionStats(), { executions: 0, members: 0, open: 0 });
    });
  });

  it('keeps a stream whose client reads, however long it stays idle past sendTimeout', async () => {
    const pubsub = countingPubSub(createInProcessPubSub<ChatTopics>());
    const handler = createGraphQLHandler({ schema: createChatSchema({ pubsub }), subscriptions: { keepAlive: 20, sendTimeout: 100 } });
    const response = await handler(request(MESSAGE_ADDED, SSE, { room: 'idle' }));
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let comments = 0;
    // Twenty keep-alives take at least four times sendTimeout: a stream read throughout stays open.
    await within(
      (async () => {
        while (comments < 20) {
          const { done, value } = await reader.read();
          assert.equal(done, false, 'the stream of a reading client ended');
          comments += decoder.decode(value).split(':\n\n').length - 1;
        }
      })(),
      10_000,
      'twenty keep-alive comments',
    );
    assert.equal(pubsub.live(), 1);
    assert.equal(handler.subscriptionStats().open, 1);
    await reader.cancel();
    await until(() => pubsub.live() === 0, 5000, 'the cancelled stream to release its subscription');
  });

  it('masks unexpected errors in events as it does in results', async () => {
    const schema = new GraphQLSchema({
      query: new GraphQLObjectType({ name: 'Query', fields: { ok: { type: GraphQLString } } }),
      subscription: new GraphQLObjectType({
        name: 'Subscription',
        fields: {
          secret: {
            type: GraphQLString,
            subscribe: async function* () {
              yield 1;
            },
            resolve: () => {
              throw new Error('database password is hunter2');
            },
          },
        },
      }),
    });
    const masked: unknown[] = [];
    const handler = createGraphQLHandler({ schema, onMaskedError: (error) => masked.push(error) });
    const text = await (await handler(request('subscription { secret }', SSE))).text();
    assert.doesNotMatch(text, /hunter2/);
    assert.match(text, /"message":"Unexpected error\."/);
    assert.match(text, /event: complete/);
    assert.equal(masked.length, 1);
  });

  it('ends every open stream without completing it on closeStreams(), for a shutdown', async () => {
    const handler = createGraphQLHandler({ schema: createChatSchema() });
    const response = await handler(request(MESSAGE_ADDED, SSE, { room: 'bye' }));
    assert.equal(handler.subscriptionStats().open, 1);
    handler.closeStreams();
    const text = await within(response.text(), 5000, 'the body to end');
    assert.equal(text, ':\n\n', 'no complete event: the client reconnects');
    assert.deepEqual(handler.subscriptionStats(), { executions: 0, members: 0, open: 0 });
  });

  it('refuses bad stream options with a message naming them, and subscriptions when they are off', async () => {
    const schema = createChatSchema();
    assert.throws(() => createGraphQLHandler({ schema, subscriptions: { maxBufferedBytes: 0 } }), /subscriptions\.maxBufferedBytes must be a positive integer/);
    assert.throws(() => createGraphQLHandler({ schema, subscriptions: { keepAlive: -1 } }), /subscriptions\.keepAlive must be a non-negative integer/);
    assert.throws(() => createGraphQLHandler({ schema, subscriptions: { sendTimeout: 1.5 } }), /subscriptions\.sendTimeout must be a non-negative integer/);
    const off = createGraphQLHandler({ schema, subscriptions: false });
    const response = await off(request(MESSAGE_ADDED, SSE, { room: 'off' }));
    assert.match(await response.text(), /not served over HTTP here: use GraphQL over WebSocket/);
  });

  it('caps streams per socket address on the Node server, and closes them when it stops', async () => {
    const handler = createGraphQLHandler({ schema: createChatSchema(), subscriptions: { clientKey: peerAddress, maxStreamsPerClient: 2 } });
    const server = await startServer({ handler, port: 0, hostname: '127.0.0.1', peerAddresses: true });
    const reads: StreamRead[] = [];
    try {
      for (let i = 0; i < 2; i++) reads.push(await StreamRead.open(server.url, { query: MESSAGE_ADDED, variables: { room: 'cap' }, accept: SSE }));
      const third = await StreamRead.open(server.url, { query: MESSAGE_ADDED, variables: { room: 'cap' }, accept: SSE });
      assert.equal(third.response.status, 429);
      await third.finished();
      assert.match(third.text, /at most 2 per client/);
    } finally {
      // Open streams must not hold the server up.
      await within(server.close(), 5000, 'the server to close with streams open');
    }
    for (const read of reads) await read.finished();
    assert.deepEqual(handler.subscriptionStats(), { executions: 0, members: 0, open: 0 });
  });
});
