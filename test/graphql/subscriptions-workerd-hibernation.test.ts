// graphql-ws on a Durable Object that really hibernates: workerd (Miniflare) evicts an object whose
// sockets are all hibernatable after 10 s without events, and constructs a new instance for the next
// one. The fixture's Worker counts the instances constructed (GET /_test/instances, answered without
// waking the object), so the test knows which events a fresh instance delivered. Nothing here calls
// our restore code: only the runtime's eviction and wake-up do.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MESSAGE_ADDED, RawSocket, RecordedSubscription, graphqlWsClient, postMessage, prime, until, within } from '../fixtures/ws/clients.ts';
import { startWorkerdDurableObject, type Target } from '../fixtures/ws/runtimes.ts';

/** Longer than workerd's 10 s of inactivity before it hibernates an object. */
const IDLE_MS = 12_000;
/** Idle periods tried before giving up on an eviction (a loaded machine may evict late). */
const ATTEMPTS = 4;

const textOf = (result: { data?: Record<string, unknown> | null } | undefined) => (result?.data?.messageAdded as { text?: string } | undefined)?.text;

describe('graphql-ws on a hibernating Durable Object (workerd)', () => {
  let target: Target;
  let origin: string;
  before(async () => {
    target = await startWorkerdDurableObject();
    origin = new URL(target.http).origin;
  });
  after(async () => {
    await target?.close();
  });

  const instances = async (): Promise<number> => {
    const response = await within(fetch(new URL('/_test/instances', origin)), 10_000, 'the instance count');
    return ((await response.json()) as { instances: number }).instances;
  };

  /**
   * Leaves the object idle until it is evicted, then runs `wake` (which must reach the object).
   * Returns once `wake` ran on a fresh instance; before that, `wake` may have run on the old one.
   * `whileAsleep` runs just before `wake`, and must not construct an instance itself.
   */
  async function acrossEviction(wake: (attempt: number) => Promise<void>, whileAsleep?: () => Promise<void>): Promise<number> {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
      const before = await instances();
      if (whileAsleep) {
        await whileAsleep();
        assert.equal(await instances(), before, 'the object was woken by what should not wake it');
      }
      await wake(attempt);
      if ((await instances()) > before) return attempt;
    }
    assert.fail(`the object was not evicted in ${ATTEMPTS} idle periods of ${IDLE_MS} ms`);
  }

  it('gives a subscriber connected across an eviction the next event exactly once, answers pings asleep, and still honours complete', async () => {
    const client = graphqlWsClient(target.ws);
    let pinger: RawSocket | undefined;
    try {
      const stays = new RecordedSubscription(client, MESSAGE_ADDED, { room: 'asleep' });
      // One per eviction attempt: each attempt completes the next one while the object sleeps.
      const leaving = Array.from({ length: ATTEMPTS }, () => new RecordedSubscription(client, MESSAGE_ADDED, { room: 'asleep-leaving' }));
      await prime(stays, target.http, 'asleep');
      for (const subscription of leaving) await prime(subscription, target.http, 'asleep-leaving');
      const raw = await new RawSocket(target.ws).open();
      pinger = raw;
      raw.send({ type: 'connection_init' });
      await raw.waitFor('connection_ack');
      const first = await instances();

      // Events posted across evictions: each reaches the subscriber once, whichever instance ran it.
      const posted: string[] = [];
      let pongs = 0;
      await acrossEviction(
        async (attempt) => {
          const text = `after eviction ${attempt}`;
          assert.equal((await postMessage(target.http, 'asleep', text)).status, 200);
          posted.push(text);
          assert.equal(textOf(await stays.next(15_000, `"${text}"`)), text);
        },
        async () => {
          // graphql-ws's keep-alive ping, answered by the runtime while the object sleeps.
          raw.send('{"type":"ping"}');
          pongs++;
          await until(() => raw.messages.filter((m) => (m as { type?: string }).type === 'pong').length === pongs, 5000, `pong ${pongs}`);
        },
      );
      assert.ok((await instances()) > first, 'a new instance delivered the event');
      assert.equal(await stays.tryNext(500), undefined, 'an event arrived twice');
      assert.deepEqual(stays.results.slice(-posted.length).map(textOf), posted, 'every event posted after priming, once each, in order');

      // `complete` sent to an evicted object ends that subscription on the instance it wakes.
      const members = async () => (await target.counts()).members;
      const completedAsleep = await acrossEviction(async (attempt) => {
        leaving[attempt].unsubscribe();
        await until(async () => (await members()) === 1 + ATTEMPTS - (attempt + 1), 10_000, 'the completed subscription to be released');
      });
      await postMessage(target.http, 'asleep-leaving', 'after complete');
      await postMessage(target.http, 'asleep', 'still subscribed');
      assert.equal(textOf(await stays.next(10_000)), 'still subscribed');
      const got = (subscription: RecordedSubscription) => subscription.results.map(textOf).includes('after complete');
      for (const subscription of leaving.slice(completedAsleep + 1)) await until(() => got(subscription), 10_000, '"after complete"');
      for (const [i, subscription] of leaving.slice(0, completedAsleep + 1).entries()) {
        assert.equal(got(subscription), false, `completed subscription ${i} still received an event`);
      }
    } finally {
      pinger?.terminate();
      await client.dispose();
    }
  });

  it('refuses a subscription too large to keep across hibernation, with an error for that operation only', async () => {
    const client = graphqlWsClient(target.ws);
    try {
      const huge = new RecordedSubscription(client, MESSAGE_ADDED, { room: 'big', padding: 'x'.repeat(20_000) });
      await huge.settled(10_000);
      assert.match(String((huge.error as { message: string }[])[0]?.message), /too many or too large subscriptions to keep across hibernation/);
      const fine = new RecordedSubscription(client, MESSAGE_ADDED, { room: 'small' });
      await prime(fine, target.http, 'small');
    } finally {
      await client.dispose();
    }
  });
});
