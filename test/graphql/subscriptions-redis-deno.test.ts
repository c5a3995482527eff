// Several Deno instances of one app share no memory: two `deno serve` processes, run from the sources
// with ioredis imported as a Deno app imports it (from node_modules, which `npm ci` fills), share
// events through a real redis-server. A subscriber on one gets what a mutation on the other publishes,
// each event once and in order, over graphql-ws and over server-sent events.
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { needs } from '../support/prereq.ts';
import { RecordedSubscription, graphqlWsClient, postMessage, prime, within } from '../fixtures/ws/clients.ts';
import { startRedis, type RunningRedis } from '../fixtures/ws/redis.ts';
import { denoServe } from '../fixtures/ws/runtimes.ts';
import type { TestCounts } from '../fixtures/ws/chat-app.ts';
import { sseClient } from '../fixtures/streams/clients.ts';
import { ADDED_QUERY, collect } from '../fixtures/ws/redis-chat-events.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

interface DenoChat {
  http: string;
  ws: string;
  counts(): Promise<TestCounts>;
  stop(): Promise<void>;
}

/**
 * `deno serve` on the Redis chat entry, granted the network, the environment and the one directory of
 * Redis's socket (Deno asks read and write permission to connect to a unix socket).
 */
async function startDenoChat(socket: string): Promise<DenoChat> {
  const denoDir = await mkdtemp(join(tmpdir(), 'skiff-deno-redis-'));
  const socketDir = dirname(socket);
  const { origin, close } = await denoServe(
    [
      '--allow-net',
      '--allow-env',
      `--allow-read=${socketDir}`,
      `--allow-write=${socketDir}`,
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      'test/fixtures/ws/deno-redis-chat-entry.ts',
    ],
    { cwd: root, dir: denoDir, env: { REDIS_SOCKET: socket, DENO_DIR: denoDir }, timeoutMs: 60_000 },
  );
  const http = new URL('/graphql', origin).href;
  return {
    http,
    ws: http.replace(/^http/, 'ws'),
    async counts() {
      const response = await within(fetch(new URL('/_test/subscribers', origin)), 5000, 'the counts');
      return (await response.json()) as TestCounts;
    },
    stop: close,
  };
}

describe('subscriptions across two Deno processes and Redis (ioredis under Deno)', () => {
  let redis: RunningRedis | undefined;
  let startError: unknown;
  let a: DenoChat | undefined;
  let b: DenoChat | undefined;

  before(async () => {
    try {
      redis = await startRedis();
      // Both started before any failure is raised, so that one that did start is stopped after.
      const started = await Promise.allSettled([startDenoChat(redis.socket), startDenoChat(redis.socket)]);
      [a, b] = started.map((r) => (r.status === 'fulfilled' ? r.value : undefined));
      for (const r of started) if (r.status === 'rejected') throw r.reason;
    } catch (error) {
      startError = error;
    }
  });
  after(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await redis?.stop();
  });

  it('a graphql-ws subscriber on one process gets two events a mutation on the other publishes, once each, in order', async (t) => {
    if (!needs(t, { commands: ['redis-server'] })) return;
    assert.ok(a && b, `redis-server or deno did not start: ${String(startError)}`);
    const clients = [graphqlWsClient(a.ws), graphqlWsClient(b.ws)];
    try {
      const [onA, onB] = clients.map((client) => new RecordedSubscription(client, ADDED_QUERY, { room: 'deno' }));
      // Until one warm-up event arrives, the subscriber's process may not have subscribed in Redis yet.
      await prime(onA, b.http, 'deno');
      await prime(onB, b.http, 'deno');
      for (const text of ['event first', 'event second']) {
        const posted = await postMessage(b.http, 'deno', text);
        assert.equal(posted.status, 200, JSON.stringify(posted.body));
      }
      for (const [name, sub] of [
        ['on A', onA],
        ['on B', onB],
      ] as const) {
        // Skips what the priming of the other subscriber sent.
        const events = await collect(sub, 'event ', 2);
        assert.deepEqual(
          events.map((e) => e.text),
          ['event first', 'event second'],
          `the subscriber ${name} got both events in publish order`,
        );
        assert.equal(await sub.tryNext(300), undefined, `the subscriber ${name} got each event once`);
        assert.equal(sub.error, undefined);
      }
      const counts = await a.counts();
      assert.equal(counts.live, 1, "A's pub/sub holds the one subscription");
    } finally {
      await Promise.all(clients.map((client) => client.dispose()));
    }
  });

  it('a server-sent events subscriber on one process gets what the other publishes, in order', async (t) => {
    if (!needs(t, { commands: ['redis-server'] })) return;
    assert.ok(a && b, `redis-server or deno did not start: ${String(startError)}`);
    const client = sseClient(a.http);
    try {
      const sub = new RecordedSubscription(client, ADDED_QUERY, { room: 'deno-sse' });
      await prime(sub, b.http, 'deno-sse');
      const count = 10;
      for (let i = 0; i < count; i++) assert.equal((await postMessage(b.http, 'deno-sse', `s ${i}`)).status, 200);
      const events = await collect(sub, 's ', count);
      assert.deepEqual(
        events.map((e) => e.text),
        Array.from({ length: count }, (_, i) => `s ${i}`),
      );
      assert.equal(await sub.tryNext(300), undefined, 'each event once');
    } finally {
      client.dispose();
    }
  });
});
