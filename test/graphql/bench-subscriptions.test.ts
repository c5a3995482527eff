// The subscription part of `npm run bench` at a tiny size: every server starts, every subscriber gets
// every event once, and every figure it reports is there and finite. No timing targets and no ratios
// decide the verdict here: the bench measures, and a loaded machine may make any ratio anything.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runSubscriptionBench, subscriptionServers, subscriptionTable } from '../../bench/graphql/subscription-bench.ts';

test('the subscription bench runs skiff and Mercurius over WebSocket, skiff and graphql-yoga over SSE, on the chat schema without losing a message', {
  timeout: 180_000,
}, async () => {
  const lines: string[] = [];
  const results = await runSubscriptionBench({
    servers: subscriptionServers,
    subscribers: [20],
    events: 5,
    minDeliveries: 200,
    pacedRate: 2000,
    pacedSeconds: 0.5,
    log: (l) => lines.push(l),
  });
  assert.deepEqual(
    results.map((m) => m.server),
    ['chat-skiff', 'chat-mercurius', 'chat-skiff-sse', 'chat-yoga-sse'],
  );
  for (const m of results) {
    assert.equal(m.bursts, 2, m.server);
    assert.equal(m.deliveries, 20 * 5 * 2, `${m.server}: every subscriber got every burst event`);
    assert.equal(m.pacedEvents, 50, `${m.server}: 100 events/s for 0.5 s`);
    assert.equal(m.lost, 0, m.server);
    assert.equal(m.duplicated, 0, m.server);
    assert.ok(m.p99Ms >= m.p50Ms && m.p50Ms > 0, `${m.server}: latencies ${m.p50Ms} / ${m.p99Ms}`);
    // The publish happens after the request was sent, on the same clock: never a longer wait.
    assert.ok(
      m.burstPublishP50Ms > 0 && m.burstP50Ms >= m.burstPublishP50Ms && m.burstP99Ms >= m.burstPublishP99Ms,
      `${m.server}: bursts ${JSON.stringify(m)}`,
    );
    assert.ok(m.firstP50Ms > 0 && m.firstP50Ms <= m.p50Ms && m.firstP99Ms <= m.p99Ms, `${m.server}: first subscriber ${m.firstP50Ms} / ${m.firstP99Ms}`);
    assert.ok(Number.isFinite(m.kbPerSubscriber), `${m.server}: memory measured`);
    // Live memory after a full collection: the server process runs with --expose-gc for it.
    assert.ok(Number.isFinite(m.liveKbPerSubscriber), `${m.server}: live memory measured`);
    // CPU comes from the server's own getrusage in microseconds: 200 HTTP deliveries cannot read as 0.
    assert.ok(m.cpuSeconds > 0 && Number.isFinite(m.cpuSeconds), `${m.server}: CPU time ${m.cpuSeconds} s`);
    assert.ok(m.deliveriesPerCoreSecond !== undefined && Number.isFinite(m.deliveriesPerCoreSecond), `${m.server}: deliveries per CPU-second`);
  }
  const table = subscriptionTable(results);
  for (const { label } of results) {
    const escaped = label.replace(/[()]/g, '\\$&');
    assert.match(table, new RegExp(`\\| 20 \\| ${escaped} \\| \\d+ \\|`), `a row with deliveries per CPU-second for ${label}:\n${table}`);
  }
  // Every ratio line is there with a finite figure or an explicit "not measured", never NaN or Infinity.
  assert.match(table, /20 subscribers: (\d+\.\d+×|not measured) Mercurius's deliveries per core/);
  assert.match(table, /20 subscribers over SSE: (\d+\.\d+×|not measured) graphql-yoga's deliveries per core/);
  assert.doesNotMatch(table, /NaN|Infinity/);
  assert.equal(lines.length, 4);
});
