// The BroadcastChannel engine as a shared pub/sub: between two instances, and between worker threads
// (which, like Deno Deploy's isolates, share no memory).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { createBroadcastChannelPubSub } from '../../src/subscriptions/pubsub-broadcast-channel.ts';
import { within } from '../fixtures/ws/clients.ts';

type Topics = { ping: { n: number }; pong: { n: number; from: string }; news: { at: string } };

describe('BroadcastChannel pub/sub', () => {
  it('delivers between two instances, and to local subscribers exactly once', async () => {
    const prefix = `skiff-test-${process.pid}-${Date.now()}:`;
    const one = createBroadcastChannelPubSub<Topics>({ prefix });
    const two = createBroadcastChannelPubSub<Topics>({ prefix });
    const stranger = createBroadcastChannelPubSub<Topics>({ prefix: `${prefix}other:` });
    try {
      const onOne = one.subscribe('news');
      const onTwo = two.subscribe('news');
      const onStranger = stranger.subscribe('news');
      await Promise.all([one.ready('news'), two.ready('news'), stranger.ready('news')]);

      // Order holds per publisher; across instances the local copy may overtake a remote one.
      await one.publish('news', { at: 'first' });
      for (const it of [onOne, onTwo]) assert.deepEqual((await within(it.next(), 2000, 'the first event')).value, { at: 'first' });
      await two.publish('news', { at: 'second' });
      for (const it of [onOne, onTwo]) assert.deepEqual((await within(it.next(), 2000, 'the second event')).value, { at: 'second' });
      // No echo: the publisher's own copy went out once, locally.
      await one.publish('news', { at: 'third' });
      assert.deepEqual((await within(onOne.next(), 2000, 'the third event')).value, { at: 'third' });
      await two.publish('news', { at: 'fourth' });
      assert.deepEqual((await within(onOne.next(), 2000, 'the fourth event')).value, { at: 'fourth' });
      // Another prefix is another app: it heard nothing.
      const nothing = await Promise.race([onStranger.next(), new Promise((r) => setTimeout(() => r('silence'), 100))]);
      assert.equal(nothing, 'silence');
    } finally {
      await Promise.all([one.close(), two.close(), stranger.close()]);
    }
  });

  it('reports and drops messages on the channel that are not its envelopes', async () => {
    const prefix = `skiff-test-garbage-${process.pid}:`;
    const errors: string[] = [];
    const pubsub = createBroadcastChannelPubSub<Topics>({ prefix, onError: (error) => errors.push(String(error)) });
    const stranger = new BroadcastChannel(`${prefix}news`);
    try {
      const news = pubsub.subscribe('news');
      await pubsub.ready('news');
      stranger.postMessage('not json');
      stranger.postMessage('{"p": "no origin"}');
      stranger.postMessage(JSON.stringify({ o: 'someone-else', p: { at: 'valid' } }));
      assert.deepEqual((await within(news.next(), 2000, 'the valid message')).value, { at: 'valid' });
      assert.equal(errors.length, 2, errors.join('\n'));
      assert.match(errors[0], /undecodable message on topic "news"/);
      assert.match(errors[1], /without an origin/);
    } finally {
      stranger.close();
      await pubsub.close();
    }
  });

  it('connects worker threads that share no memory', async () => {
    const worker = new Worker(new URL('../fixtures/ws/broadcast-worker.mjs', import.meta.url));
    const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
    const pubsub = createBroadcastChannelPubSub<Topics>({ prefix: 'skiff-test:' });
    try {
      await within(
        new Promise<void>((resolve, reject) => {
          worker.once('message', () => resolve());
          worker.once('error', reject);
        }),
        20_000,
        'the worker to subscribe',
      );
      const pongs = pubsub.subscribe('pong');
      await pubsub.ready('pong');
      for (let n = 1; n <= 3; n++) {
        await pubsub.publish('ping', { n });
        assert.deepEqual((await within(pongs.next(), 5000, `pong ${n} from the worker`)).value, { n, from: 'worker' });
      }
    } finally {
      await pubsub.close();
      worker.postMessage('stop');
      await within(exited, 5000, 'the worker to exit').catch(() => worker.terminate());
    }
  });
});
