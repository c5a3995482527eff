// The cold-start part of `npm run bench` runs end to end: every bundle starts fresh in workerd (workerd serve and Miniflare) and
// Deno and its first body is graphql-js's answer to Q1 (the bench checks each one). No timing is
// asserted here; `npm run bench` measures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { coldStartRuntimes, coldStartVariants, runColdStartBench } from '../../bench/graphql/cold-start-bench.ts';

test('the cold-start bench starts every bundle fresh in workerd serve, Miniflare and Deno and checks its first answer', { timeout: 180_000 }, async () => {
  const results = await runColdStartBench({ runtimes: coldStartRuntimes, samples: 1, log: () => {} });
  assert.equal(results.length, coldStartRuntimes.length * coldStartVariants.length);
  for (const r of results) {
    assert.equal(r.samples.length, 1, `${r.runtime} ${r.variant}`);
    assert.ok(r.medianMs > 0 && Number.isFinite(r.medianMs), `${r.runtime} ${r.variant}: ${r.medianMs} ms`);
    assert.ok(r.bytes > 0 && r.gzipBytes > 0, `${r.runtime} ${r.variant}: sizes`);
    if (r.variant !== 'empty worker') assert.ok(r.gzipBytes < r.bytes, `${r.runtime} ${r.variant}: gzip smaller than minified`);
  }
  // Our bundle is the one the build writes for that runtime, the peers are bundled beside it.
  const ours = results.filter((r) => r.variant === 'skiff');
  assert.equal(ours.length, coldStartRuntimes.length);
});
