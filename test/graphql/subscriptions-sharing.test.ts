// Shared subscription executions on the Node server: the default sharing rule, the opt-outs, and
// backpressure: one client that stops reading among a thousand is closed (1013) while the others
// keep receiving every event.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type WebSocket from 'ws';
import { GraphQLBoolean, GraphQLError, GraphQLInt, GraphQLObjectType, GraphQLSchema } from 'graphql';
import { startServer, type RunningServer } from '../../node/graphql/app.ts';
import type { GraphQLWebSocketOptions } from '../../src/subscriptions/graphql-ws-adapter.ts';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import { createChatSchema, type ChatMessage } from '../../examples/chat/schema.ts';
import { countMineResolves, countingPubSub } from '../fixtures/ws/chat-app.ts';
import { RawSocket, until, within } from '../fixtures/ws/clients.ts';

const QUERY = 'subscription { messageAdded(room: "r") { id text mine } }';

async function chatServer(webSocket: Omit<GraphQLWebSocketOptions, 'schema'> = {}) {
  const pubsub = countingPubSub();
  const schema = createChatSchema({ pubsub });
  const mineResolved = countMineResolves(schema);
  const server = await startServer({
    handler: createGraphQLHandler({ schema }),
    port: 0,
    hostname: '127.0.0.1',
    subscriptions: { keepAlive: 0, ...webSocket, schema },
  });
  const ws = server.url.replace(/^http/, 'ws');
  let sequence = 0;
  const publish = (text: string) => {
    const message: ChatMessage = { id: String(++sequence), room: 'r', author: 'x', text, createdAt: new Date().toISOString() };
    return pubsub.publish('room:r', message);
  };
  return { server, ws, pubsub, mineResolved, publish };
}

/**
 * Subscribes `count` raw sockets (user from connectionParams) and waits until each is registered.
 * They connect a hundred at a time: what is under test is the fan-out, not a connection storm.
 */
async function subscribers(url: string, count: number, user?: string): Promise<RawSocket[]> {
  const sockets: RawSocket[] = [];
  for (let first = 0; first < count; first += 100) {
    const wave = Array.from({ length: Math.min(100, count - first) }, async (_, i) => {
      const socket = new RawSocket(url);
      try {
        await socket.open();
      } catch (error) {
        throw new Error(`subscriber ${first + i + 1} of ${count} could not connect: ${(error as Error).message}`, { cause: error });
      }
      socket.send({ type: 'connection_init', payload: user ? { user } : {} });
      await socket.waitFor('connection_ack');
      socket.send({ type: 'subscribe', id: 'one', payload: { query: QUERY } });
      return socket;
    });
    sockets.push(...(await Promise.all(wave)));
  }
  return sockets;
}

const nexts = (socket: RawSocket) => socket.frames.filter((frame) => frame.includes('"type":"next"'));

describe('shared subscription executions (Node)', () => {
  const servers: RunningServer[] = [];
  after(async () => {
    await Promise.all(servers.map((s) => s.close()));
  });

  const cases: [string, Omit<GraphQLWebSocketOptions, 'schema'>, number][] = [
    ['without a context option they are shared (nothing per connection reaches resolvers)', {}, 1],
    ['with a context option and no share key, each subscriber runs alone', { context: () => ({ user: 'same' }) }, 3],
    ['subscriptionShareKey: false never shares', { subscriptionShareKey: false }, 3],
  ];
  for (const [what, options, executions] of cases) {
    it(what, async () => {
      const chat = await chatServer(options);
      servers.push(chat.server);
      const sockets = await subscribers(chat.ws, 3);
      try {
        const stats = () => chat.server.webSocketServer!.subscriptionStats();
        if (options.subscriptionShareKey === false) {
          // graphql-ws's own path: wait until each is listening.
          await until(() => chat.pubsub.live() === 3, 5000, 'three listeners');
        } else {
          // Unshared subscriptions go through the same path, as executions of one member each.
          await until(() => stats().members === 3, 5000, 'three members');
          assert.equal(stats().executions, executions);
        }
        await chat.publish('hello');
        await until(() => sockets.every((s) => nexts(s).length === 1), 5000, 'the event on every socket');
        assert.equal(chat.mineResolved(), executions, 'one resolver call per execution');
        assert.equal(new Set(sockets.map((s) => nexts(s)[0])).size, 1, 'the same bytes on every socket');
      } finally {
        for (const s of sockets) s.terminate();
      }
    });
  }

  it('a source that fails ends every member with an error; a failing subscribe resolver with one result each', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let sourcesStarted = 0;
    const schema = new GraphQLSchema({
      query: new GraphQLObjectType({ name: 'Query', fields: { ok: { type: GraphQLBoolean, resolve: () => true } } }),
      subscription: new GraphQLObjectType({
        name: 'Subscription',
        fields: {
          ticks: {
            type: GraphQLInt,
            subscribe: async function* () {
              sourcesStarted++;
              await gate;
              yield 1;
              throw new Error('the source broke');
            },
            resolve: (n: number) => n,
          },
          refused: {
            type: GraphQLInt,
            subscribe: () => {
              throw new GraphQLError('not allowed');
            },
          },
        },
      }),
    });
    const server = await startServer({ handler: createGraphQLHandler({ schema }), port: 0, hostname: '127.0.0.1', subscriptions: { schema, keepAlive: 0 } });
    servers.push(server);
    const ws = server.url.replace(/^http/, 'ws');
    const open = async () => {
      const socket = await new RawSocket(ws).open();
      socket.send({ type: 'connection_init' });
      await socket.waitFor('connection_ack');
      return socket;
    };
    const sockets = [await open(), await open()];
    try {
      for (const socket of sockets) socket.send({ type: 'subscribe', id: 't', payload: { query: 'subscription { ticks }' } });
      await until(() => server.webSocketServer!.subscriptionStats().members === 2, 5000, 'both members');
      release();
      for (const socket of sockets) {
        await socket.waitFor('error');
        const types = socket.messages.map((m) => (m as { type: string }).type);
        assert.deepEqual(types, ['connection_ack', 'next', 'error']);
        assert.deepEqual((socket.messages[1] as { payload: unknown }).payload, { data: { ticks: 1 } });
        assert.match(JSON.stringify((socket.messages[2] as { payload: unknown }).payload), /the source broke/);
      }
      assert.equal(sourcesStarted, 1, 'one source for both');
      await until(() => server.webSocketServer!.subscriptionStats().executions === 0, 5000, 'the execution to end');

      for (const socket of sockets) socket.send({ type: 'subscribe', id: 'r', payload: { query: 'subscription { refused }' } });
      for (const socket of sockets) {
        await socket.waitFor('complete');
        const result = socket.messages.find((m) => (m as { type: string; id?: string }).type === 'next' && (m as { id?: string }).id === 'r');
        assert.match(JSON.stringify(result), /not allowed/);
      }
      assert.equal(server.webSocketServer!.subscriptionStats().open, 0);
    } finally {
      for (const socket of sockets) socket.terminate();
    }
  });

  it('closes one client that stops reading (1013) while 999 others get every event', async () => {
    const maxBufferedBytes = 256 << 10;
    const chat = await chatServer({ maxBufferedBytes });
    servers.push(chat.server);
    const others = await subscribers(chat.ws, 999);
    // The stalled client holds 100 subscriptions of the same operation, so its share of each event
    // (100 frames) fills the kernel's socket buffers and then ours within a few dozen events.
    const stalled = await new RawSocket(chat.ws).open();
    stalled.send({ type: 'connection_init' });
    await stalled.waitFor('connection_ack');
    for (let i = 0; i < 100; i++) stalled.send({ type: 'subscribe', id: `s${i}`, payload: { query: QUERY } });
    const server = chat.server.webSocketServer!;
    try {
      await until(() => server.subscriptionStats().members === 1099, 15_000, 'every subscription registered');
      assert.equal(server.subscriptionStats().executions, 1);
      (stalled.socket as WebSocket & { pause(): void }).pause();

      const text = 'x'.repeat(1500);
      let events = 0;
      while (server.openSockets === 1000) {
        assert.ok(events < 400, `the stalled client was still open after ${events} events`);
        await chat.publish(text);
        events++;
        await until(() => others.every((s) => nexts(s).length === events), 20_000, `event ${events} on all 999 readers`);
      }
      // A few more: the others are not held up by the closed one.
      for (let i = 0; i < 3; i++) {
        await chat.publish(text);
        events++;
        await until(() => others.every((s) => nexts(s).length === events), 20_000, `event ${events} after the close`);
      }
      (stalled.socket as WebSocket & { resume(): void }).resume();
      const closed = await within(stalled.closed, 60_000, 'the stalled client to read up to the close frame');
      assert.equal(closed.code, 1013);
      // It got a prefix of the events, never more than the limit's worth past the kernel buffers.
      assert.ok(nexts(stalled).length < events * 100, `${nexts(stalled).length} frames of ${events * 100}`);
      for (const socket of others) {
        const ids = nexts(socket).map((frame) => (JSON.parse(frame) as { payload: { data: { messageAdded: { id: string } } } }).payload.data.messageAdded.id);
        assert.deepEqual(
          ids,
          Array.from({ length: events }, (_, i) => String(i + 1)),
          'every event once, in order',
        );
      }
    } finally {
      stalled.terminate();
      for (const s of others) s.terminate();
    }
  });
});
