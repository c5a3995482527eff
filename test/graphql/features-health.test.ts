// Liveness and readiness probes from the fetch handler itself: opt-in, paths configurable, never
// cached, HEAD without a body, readiness following the embedder's check.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createCountriesHandler } from '../../src/index.ts';

test('health: off by default; /healthz and /readyz when asked, with configurable paths and a readiness check', async () => {
  const plain = createCountriesHandler();
  assert.equal((await plain(new Request('http://x/healthz'))).status, 404, 'no probes unless asked');

  let ready = false;
  const handler = createCountriesHandler({ health: { ready: () => ready } });
  const live = await handler(new Request('http://x/healthz'));
  assert.equal(live.status, 200);
  assert.equal(live.headers.get('cache-control'), 'no-store');
  assert.deepEqual(await live.json(), { status: 'ok' });
  assert.equal((await handler(new Request('http://x/readyz'))).status, 503, 'not ready until the check says so');
  ready = true;
  assert.equal((await handler(new Request('http://x/readyz'))).status, 200);
  const head = await handler(new Request('http://x/readyz', { method: 'HEAD' }));
  assert.equal(head.status, 200);
  assert.equal(await head.text(), '');
  const post = await handler(new Request('http://x/healthz', { method: 'POST' }));
  assert.equal(post.status, 405);
  assert.equal(post.headers.get('allow'), 'GET, HEAD');
  // The endpoint itself is unchanged.
  const q = await handler(new Request('http://x/graphql?query={country(code:"FR"){name}}'));
  assert.deepEqual(await q.json(), { data: { country: { name: 'France' } } });

  const custom = createCountriesHandler({
    path: null,
    health: {
      livenessPath: '/live',
      readinessPath: '/ready',
      ready: async () => {
        throw new Error('db down');
      },
    },
  });
  assert.equal((await custom(new Request('http://x/live'))).status, 200);
  const failing = await custom(new Request('http://x/ready'));
  assert.equal(failing.status, 503);
  assert.doesNotMatch(await failing.text(), /db down/, 'the reason stays inside');
  assert.equal((await custom(new Request('http://x/healthz?query={__typename}'))).status, 200, 'other paths still reach GraphQL when path is null');
  assert.throws(() => createCountriesHandler({ health: { livenessPath: 'live' } }), /health\.livenessPath must start with "\/"/);
});
