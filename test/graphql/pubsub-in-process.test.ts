// The in-process PubSub: delivery, cleanup on return()/abort/close, and the bounded queue.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createInProcessPubSub, LocalTopics } from '../../src/subscriptions/pubsub.ts';
import { within } from '../fixtures/ws/clients.ts';

type Topics = { greetings: string; counts: number };

describe('in-process pub/sub', () => {
  it('delivers each published payload to every current subscriber of the topic, in order', async () => {
    const pubsub = createInProcessPubSub<Topics>();
    const a = pubsub.subscribe('greetings');
    const b = pubsub.subscribe('greetings');
    const other = pubsub.subscribe('counts');
    await pubsub.publish('greetings', 'hello');
    await pubsub.publish('greetings', 'world');
    await pubsub.publish('counts', 7);
    for (const it of [a, b]) {
      assert.deepEqual(await it.next(), { value: 'hello', done: false });
      assert.deepEqual(await it.next(), { value: 'world', done: false });
    }
    assert.deepEqual(await other.next(), { value: 7, done: false });
    await pubsub.close();
  });

  it('wakes a consumer already waiting in next()', async () => {
    const pubsub = createInProcessPubSub<Topics>();
    const it = pubsub.subscribe('counts');
    const pending = it.next();
    await pubsub.publish('counts', 1);
    assert.deepEqual(await within(pending, 1000, 'the waiting next()'), { value: 1, done: false });
  });

  it('does not deliver what was published before subscribing', async () => {
    const pubsub = createInProcessPubSub<Topics>();
    await pubsub.publish('counts', 1);
    const it = pubsub.subscribe('counts');
    await pubsub.publish('counts', 2);
    assert.deepEqual(await it.next(), { value: 2, done: false });
  });

  it('return() unsubscribes at once and settles a pending next() as done', async () => {
    const topics = new LocalTopics();
    const it = topics.subscribe('t');
    assert.equal(topics.subscriberCount('t'), 1);
    const pending = it.next();
    assert.deepEqual(await it.return!(), { value: undefined, done: true });
    assert.deepEqual(await within(pending, 1000, 'the pending next() to settle'), { value: undefined, done: true });
    assert.equal(topics.subscriberCount(), 0);
    topics.deliver('t', 'late');
    assert.deepEqual(await it.next(), { value: undefined, done: true });
  });

  it('for await … break releases the subscription', async () => {
    const topics = new LocalTopics();
    const it = topics.subscribe('t');
    topics.deliver('t', 1);
    for await (const value of it) {
      assert.equal(value, 1);
      break;
    }
    assert.equal(topics.subscriberCount('t'), 0);
  });

  it('an aborted signal ends the iterator and releases it', async () => {
    const topics = new LocalTopics();
    const controller = new AbortController();
    const it = topics.subscribe('t', { signal: controller.signal });
    const pending = it.next();
    controller.abort();
    assert.deepEqual(await within(pending, 1000, 'abort to end the iterator'), { value: undefined, done: true });
    assert.equal(topics.subscriberCount(), 0);
    const already = topics.subscribe('t', { signal: controller.signal });
    assert.deepEqual(await already.next(), { value: undefined, done: true });
    assert.equal(topics.subscriberCount(), 0);
  });

  it('close() ends every iterator', async () => {
    const pubsub = createInProcessPubSub<Topics>();
    const its = [pubsub.subscribe('counts'), pubsub.subscribe('greetings')];
    const pending = its.map((it) => it.next());
    await pubsub.close();
    for (const result of await within(Promise.all(pending), 1000, 'close to end the iterators')) {
      assert.deepEqual(result, { value: undefined, done: true });
    }
  });

  it('keeps at most maxQueuedEvents for a subscriber that does not consume, dropping the oldest', async () => {
    const pubsub = createInProcessPubSub<Topics>({ maxQueuedEvents: 3 });
    const it = pubsub.subscribe('counts');
    for (let i = 1; i <= 5; i++) await pubsub.publish('counts', i);
    const got = [];
    for (let i = 0; i < 3; i++) got.push((await it.next()).value);
    assert.deepEqual(got, [3, 4, 5]);
    assert.throws(() => createInProcessPubSub({ maxQueuedEvents: 0 }), /maxQueuedEvents must be a positive integer/);
  });

  it('tells the engine hooks when a topic gains its first and loses its last subscriber', () => {
    const calls: string[] = [];
    const topics = new LocalTopics({}, { onFirstSubscriber: (t) => calls.push(`+${t}`), onLastSubscriber: (t) => calls.push(`-${t}`) });
    const a = topics.subscribe('x');
    const b = topics.subscribe('x');
    void a.return!();
    assert.deepEqual(calls, ['+x']);
    void b.return!();
    void b.return!();
    assert.deepEqual(calls, ['+x', '-x']);
    assert.throws(() => topics.subscribe(''), /topic must be a non-empty string/);
  });
});
