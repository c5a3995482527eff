// The Redis engine against a real redis-server: between two pub/sub instances, and between two chat
// example processes (examples/chat/serve.ts with REDIS_URL), subscriber on one, mutation on the other.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { createRedisPubSub } from '../../src/subscriptions/pubsub-redis.ts';
import { needs } from '../support/prereq.ts';
import { MESSAGE_ADDED, RecordedSubscription, graphqlWsClient, postMessage, prime, within } from '../fixtures/ws/clients.ts';
import { startRedis, type RunningRedis } from '../fixtures/ws/redis.ts';

type Topics = { news: { at: string; n?: number } };
const root = fileURLToPath(new URL('../../', import.meta.url));

describe('Redis pub/sub', () => {
  let redis: RunningRedis | undefined;
  let startError: unknown;
  const clients: Redis[] = [];
  const connect = (socket: string) => {
    const client = new Redis(socket, { maxRetriesPerRequest: 2 });
    clients.push(client);
    return client;
  };

  before(async () => {
    // A missing redis-server is reported by needs() in each test; any other failure by the assertion.
    redis = await startRedis().catch((error: unknown) => {
      startError = error;
      return undefined;
    });
  });
  after(async () => {
    await Promise.allSettled(clients.map((c) => c.quit()));
    await redis?.stop();
  });

  it('delivers between instances, once each, and unsubscribes from Redis with the last subscriber', async (t) => {
    if (!needs(t, { commands: ['redis-server'] })) return;
    assert.ok(redis, `redis-server did not start: ${String(startError)}`);
    const prefix = `test-${Date.now()}:`;
    const one = createRedisPubSub<Topics>({ publisher: connect(redis.socket), subscriber: connect(redis.socket), prefix });
    const two = createRedisPubSub<Topics>({ publisher: connect(redis.socket), subscriber: connect(redis.socket), prefix });
    const observer = connect(redis.socket);
    const listeners = async () => Number(((await observer.pubsub('NUMSUB', `${prefix}news`)) as [string, number])[1]);
    try {
      const onOne = one.subscribe('news');
      const onTwo = two.subscribe('news');
      await Promise.all([one.ready('news'), two.ready('news')]);
      assert.equal(await listeners(), 2);

      await one.publish('news', { at: 'one' });
      for (const it of [onOne, onTwo]) assert.deepEqual((await within(it.next(), 5000, 'the event from one')).value, { at: 'one' });
      await two.publish('news', { at: 'two' });
      for (const it of [onOne, onTwo]) assert.deepEqual((await within(it.next(), 5000, 'the event from two')).value, { at: 'two' });
      // Redis echoes one's message back to it; that copy must be dropped.
      await one.publish('news', { at: 'again', n: 1 });
      await two.publish('news', { at: 'again', n: 2 });
      assert.deepEqual((await within(onOne.next(), 5000, 'again 1')).value, { at: 'again', n: 1 });
      assert.deepEqual((await within(onOne.next(), 5000, 'again 2')).value, { at: 'again', n: 2 });

      await onTwo.return!();
      await two.ready('news');
      assert.equal(await listeners(), 1, 'the last local subscriber leaving unsubscribes that instance');
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });

  it("gives every subscriber, the publisher's own included, the order in which publishes resolved", async (t) => {
    if (!needs(t, { commands: ['redis-server'] })) return;
    assert.ok(redis, `redis-server did not start: ${String(startError)}`);
    const prefix = `order-${Date.now()}:`;
    const one = createRedisPubSub<Topics>({ publisher: connect(redis.socket), subscriber: connect(redis.socket), prefix });
    const two = createRedisPubSub<Topics>({ publisher: connect(redis.socket), subscriber: connect(redis.socket), prefix });
    try {
      const onOne = one.subscribe('news');
      const onTwo = two.subscribe('news');
      await Promise.all([one.ready('news'), two.ready('news')]);
      // Each publish starts once the previous one, on the other instance, resolved: a subscriber
      // served by the second publisher must still see the first publisher's event first.
      const count = 200;
      for (let n = 0; n < count; n++) await (n % 2 ? two : one).publish('news', { at: n % 2 ? 'two' : 'one', n });
      for (const [name, it] of [
        ['one', onOne],
        ['two', onTwo],
      ] as const) {
        const seen: number[] = [];
        while (seen.length < count) seen.push((await within(it.next(), 5000, `event ${seen.length} on ${name}`)).value.n as number);
        assert.deepEqual(
          seen,
          Array.from({ length: count }, (_, n) => n),
          `the subscriber on ${name} got them in publish order`,
        );
      }
      // A subscriber that arrives just before a publish on its own instance hears it.
      const lateTopic = one.subscribe('other' as 'news');
      await one.publish('other' as 'news', { at: 'late' });
      assert.deepEqual((await within(lateTopic.next(), 5000, 'the event on a topic subscribed just before')).value, { at: 'late' });
      await lateTopic.return!();
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });

  describe('two chat example processes sharing one Redis', () => {
    const servers: ChildProcess[] = [];
    after(async () => {
      await Promise.all(
        servers.map(async (child) => {
          const exited = new Promise((resolve) => child.once('exit', resolve));
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
          await within(exited, 5000, 'the chat server to exit').catch(() => child.kill('SIGKILL'));
        }),
      );
    });

    const startChat = async (socket: string): Promise<{ http: string; ws: string }> => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'examples/chat/serve.ts'], {
        cwd: root,
        env: { ...process.env, PORT: '0', HOST: '127.0.0.1', REDIS_URL: socket },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      servers.push(child);
      let output = '';
      const http = await within(
        new Promise<string>((resolve, reject) => {
          const onData = (chunk: Buffer) => {
            output += chunk.toString();
            const match = /ready at (http:\/\/\S+\/graphql)/.exec(output);
            if (match) resolve(match[1]);
          };
          child.stdout!.on('data', onData);
          child.stderr!.on('data', onData);
          child.once('exit', (code) => reject(new Error(`examples/chat/serve.ts exited with ${code}:\n${output}`)));
        }),
        30_000,
        'examples/chat/serve.ts to listen',
      );
      return { http, ws: http.replace(/^http/, 'ws') };
    };

    it('a subscriber on one process receives the mutations served by the other', async (t) => {
      if (!needs(t, { commands: ['redis-server'] })) return;
      assert.ok(redis, `redis-server did not start: ${String(startError)}`);
      const [a, b] = await Promise.all([startChat(redis.socket), startChat(redis.socket)]);
      const client = graphqlWsClient(a.ws);
      try {
        const sub = new RecordedSubscription(client, MESSAGE_ADDED, { room: 'shared' });
        await prime(sub, b.http, 'shared'); // posted to B, seen on A
        for (const [server, text] of [
          [b, 'from b'],
          [a, 'from a'],
          [b, 'from b again'],
        ] as const) {
          const posted = await postMessage(server.http, 'shared', text);
          assert.equal(posted.status, 200, JSON.stringify(posted.body));
          const event = await sub.next(5000, `"${text}" on A`);
          assert.equal((event.data?.messageAdded as { text: string } | undefined)?.text, text);
        }
        assert.equal(await sub.tryNext(200), undefined, 'each message arrives once');
      } finally {
        await client.dispose();
      }
    });
  });
});
