// More than one server: two Node server processes sharing events through a real redis-server.
// Subscribers on one receive, in order, what mutations on the other publish; equal subscribers on a
// process still share one execution; and a Redis restart loses nothing published once it is back,
// without the clients seeing any error.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { needs } from '../support/prereq.ts';
import { RecordedSubscription, graphqlWsClient, postMessage, prime, until, within } from '../fixtures/ws/clients.ts';
import { startRedis, type RunningRedis } from '../fixtures/ws/redis.ts';
import type { TestCounts } from '../fixtures/ws/chat-app.ts';
import { sseClient } from '../fixtures/streams/clients.ts';
import { ADDED_QUERY, collect } from '../fixtures/ws/redis-chat-events.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

interface ChatProcess {
  http: string;
  ws: string;
  counts(): Promise<TestCounts>;
}

describe('subscriptions across two server processes and Redis', () => {
  let redis: RunningRedis | undefined;
  let startError: unknown;
  const children: ChildProcess[] = [];
  let a: ChatProcess;
  let b: ChatProcess;

  const startChat = async (socket: string): Promise<ChatProcess> => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/ws/redis-chat-server.ts'], {
      cwd: root,
      env: { ...process.env, REDIS_SOCKET: socket },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    const http = await within(
      new Promise<string>((resolve, reject) => {
        const onData = (chunk: Buffer) => {
          output += chunk.toString();
          const match = /READY (http:\/\/\S+\/graphql)/.exec(output);
          if (match) resolve(match[1]);
        };
        child.stdout!.on('data', onData);
        child.stderr!.on('data', onData);
        child.once('exit', (code) => reject(new Error(`the chat server exited with ${code}:\n${output}`)));
      }),
      30_000,
      'the chat server to listen',
    );
    return {
      http,
      ws: http.replace(/^http/, 'ws'),
      async counts() {
        const response = await within(fetch(new URL('/_test/subscribers', http)), 5000, 'the counts');
        return (await response.json()) as TestCounts;
      },
    };
  };

  before(async () => {
    redis = await startRedis().catch((error: unknown) => {
      startError = error;
      return undefined;
    });
    if (redis) [a, b] = await Promise.all([startChat(redis.socket), startChat(redis.socket)]);
  });
  after(async () => {
    await Promise.all(
      children.map(async (child) => {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        await within(exited, 5000, 'the chat server to exit').catch(() => child.kill('SIGKILL'));
      }),
    );
    await redis?.stop();
  });

  it('subscribers on one process get what the other publishes, in order, one execution per event there', async (t) => {
    if (!needs(t, { commands: ['redis-server'] })) return;
    assert.ok(redis, `redis-server did not start: ${String(startError)}`);
    const clients = [graphqlWsClient(a.ws), graphqlWsClient(a.ws), graphqlWsClient(a.ws), graphqlWsClient(b.ws)];
    try {
      const subs = clients.map((client) => new RecordedSubscription(client, ADDED_QUERY, { room: 'multi' }));
      for (const sub of subs) await prime(sub, b.http, 'multi');
      const onA = await a.counts();
      assert.deepEqual([onA.executions, onA.members, onA.live], [1, 3, 1], 'the three equal subscribers on A share one execution');

      const count = 60;
      let next = 0;
      // Six mutations in flight at once on B: B's ids grow in the order it publishes them.
      await Promise.all(
        Array.from({ length: 6 }, async () => {
          while (next < count) {
            const posted = await postMessage(b.http, 'multi', `n ${next++}`);
            assert.equal(posted.status, 200, JSON.stringify(posted.body));
          }
        }),
      );
      for (const [i, sub] of subs.entries()) {
        const events = await collect(sub, 'n ', count);
        const ids = events.map((e) => Number(e.id));
        assert.deepEqual(
          ids,
          [...ids].sort((x, y) => x - y),
          `subscriber ${i} got B's events in publish order`,
        );
        assert.equal(new Set(events.map((e) => e.text)).size, count, `subscriber ${i} got each event once`);
        assert.equal(await sub.tryNext(200), undefined, `subscriber ${i} got nothing more`);
      }
      const afterA = await a.counts();
      assert.equal(afterA.mineResolved - onA.mineResolved, count, 'A executed each event once for its three subscribers');
    } finally {
      await Promise.all(clients.map((client) => client.dispose()));
    }
  });

  it('subscribers over server-sent events get what the other process publishes, in order', async (t) => {
    if (!needs(t, { commands: ['redis-server'] })) return;
    assert.ok(redis, `redis-server did not start: ${String(startError)}`);
    const client = sseClient(a.http);
    try {
      const sub = new RecordedSubscription(client, ADDED_QUERY, { room: 'sse-multi' });
      await prime(sub, b.http, 'sse-multi');
      const count = 20;
      for (let i = 0; i < count; i++) assert.equal((await postMessage(b.http, 'sse-multi', `s ${i}`)).status, 200);
      const events = await collect(sub, 's ', count);
      assert.deepEqual(
        events.map((e) => e.text),
        Array.from({ length: count }, (_, i) => `s ${i}`),
      );
      assert.equal((await a.counts()).streams.open, 1);
    } finally {
      client.dispose();
    }
    await until(async () => (await a.counts()).live === 0, 5000, 'the stream to release its subscription on A');
  });

  it('a Redis restart loses nothing published once it is back, and clients see no error', async (t) => {
    if (!needs(t, { commands: ['redis-server'] })) return;
    assert.ok(redis, `redis-server did not start: ${String(startError)}`);
    const clients = [graphqlWsClient(a.ws), graphqlWsClient(b.ws)];
    const observer = new Redis(redis.socket, { maxRetriesPerRequest: 1 });
    observer.on('error', () => {});
    try {
      const subs = clients.map((client) => new RecordedSubscription(client, ADDED_QUERY, { room: 'restart' }));
      for (const sub of subs) await prime(sub, b.http, 'restart');

      await redis.restart();
      // Back: the server accepts connections again and both processes have re-subscribed.
      await until(
        async () => {
          const reply = (await observer.pubsub('NUMSUB', 'skiff:room:restart').catch(() => ['', 0])) as [string, number];
          return Number(reply[1]) === 2;
        },
        20_000,
        'both servers to subscribe again after the restart',
      );
      const count = 40;
      for (let i = 0; i < count; i++) {
        const posted = await postMessage((i % 2 ? a : b).http, 'restart', `r ${i}`);
        assert.equal(posted.status, 200, JSON.stringify(posted.body));
      }
      for (const [i, sub] of subs.entries()) {
        const events = await collect(sub, 'r ', count);
        assert.deepEqual(
          events.map((e) => e.text),
          Array.from({ length: count }, (_, n) => `r ${n}`),
          `subscriber ${i} got every event after the restart, in order`,
        );
        assert.equal(sub.error, undefined, 'no error reached the client');
        assert.equal(sub.completed, false, 'the subscription is still live');
      }
    } finally {
      observer.disconnect();
      await Promise.all(clients.map((client) => client.dispose()));
    }
  });
});
