// The bounds NRI keeps on work in flight, on their own: a plugin's synchronization waits for pod and
// container creations under way (bounded), and new ones wait for it; a plugin's unsolicited
// requests run a few at a time, with a bounded number waiting.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RequestLimit, RequestLimitExceeded } from '../../node/skiffd/nri/request-limit.ts';
import { SyncBusyError, SyncGate } from '../../node/skiffd/nri/sync-gate.ts';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

test('NRI sync gate: a synchronization waits for creations in flight, and later ones wait for it', async () => {
  const gate = new SyncGate(60_000);
  const order: string[] = [];
  const first = await gate.block();
  const sync = gate.synchronize(async () => {
    order.push('sync');
  });
  // A creation that starts while the synchronization is due waits for it.
  const later = gate.block().then((release) => {
    order.push('later create');
    release();
  });
  await tick();
  assert.equal(order.length, 0);
  order.push('first create done');
  first();
  first(); // a second release changes nothing
  await sync;
  await later;
  assert.deepEqual(order, ['first create done', 'sync', 'later create']);
  assert.equal(gate.blocks, 0);
});

test('NRI sync gate: creations still in flight past the bound fail the synchronization, and the gate goes on', async () => {
  const gate = new SyncGate(200);
  const release = await gate.block();
  await assert.rejects(
    gate.synchronize(async () => assert.fail('synchronized during a creation')),
    (err: Error) => err instanceof SyncBusyError && /1 pod or container creation\(s\) still in flight after 200 ms/.test(err.message),
  );
  release();
  assert.equal(await gate.synchronize(async () => 'synchronized'), 'synchronized');
  (await gate.block())();
});

test('NRI sync gate: a plugin that goes away stops waiting at once', async () => {
  const gate = new SyncGate(60_000);
  const release = await gate.block();
  const gone = new AbortController();
  const sync = gate.synchronize(async () => assert.fail('synchronized a plugin that went away'), gone.signal);
  gone.abort();
  await assert.rejects(sync, /the plugin went away/);
  release();
  (await gate.block())();
});

test('NRI sync gate: a creation behind synchronizations that never end goes ahead after the bound', { timeout: 10_000 }, async () => {
  const gate = new SyncGate(300);
  // Synchronizations queued one after another, the first never answering until the test lets it.
  let answer!: () => void;
  const unanswered = new Promise<void>((resolve) => (answer = resolve));
  let syncsDone = false;
  const syncs = Promise.allSettled(Array.from({ length: 10 }, () => gate.synchronize(() => unanswered))).then(() => (syncsDone = true));
  // Without the bound this never returns, and the test's timeout fails it.
  const release = await gate.block();
  assert.equal(syncsDone, false, 'the creation went ahead while the synchronizations still waited');
  release();
  answer();
  await syncs;
});

test('NRI request limit: a few at a time, a bounded number waiting, the rest refused', async () => {
  const limit = new RequestLimit(2, 3);
  let running = 0;
  let most = 0;
  const gates: (() => void)[] = [];
  const job = () =>
    limit.run(async () => {
      running++;
      most = Math.max(most, running);
      await new Promise<void>((resolve) => gates.push(resolve));
      running--;
      return 'done';
    });
  const taken = Array.from({ length: 5 }, job);
  await tick();
  assert.equal(running, 2);
  await assert.rejects(job(), (err: Error) => err instanceof RequestLimitExceeded && /2 requests in progress and 3 waiting/.test(err.message));
  // Finish them one by one: each freed slot goes to one waiting request.
  while (gates.length > 0) {
    gates.shift()?.();
    await tick();
  }
  assert.deepEqual(await Promise.all(taken), ['done', 'done', 'done', 'done', 'done']);
  assert.equal(most, 2);
  assert.equal(await limit.run(async () => 'after'), 'after');
});
