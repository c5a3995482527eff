// The lazy-compile bench runs end to end: each bundle answers Q1 in a fresh Node, and the functions V8
// compiled for it are traced back to their source files through the source map. No size is asserted
// against another; the bench reports them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lazyCompileTable, measureLazyCompile } from '../../bench/graphql/cold-start-lazy-compile.ts';

test('the lazy-compile bench maps what a first request compiles to the source files of each bundle', { timeout: 120_000 }, async () => {
  const results = await measureLazyCompile(() => {});
  assert.deepEqual(
    results.map((r) => r.variant),
    ['skiff', 'skiff, optional parts off', 'graphql-http'],
  );
  for (const { variant, bytes } of results) {
    // Every bundle parses, validates and executes with graphql-js, and resolves from the countries dataset.
    for (const file of ['graphql/language', 'graphql/validation', 'graphql/execution', 'src/countries/schema.ts']) {
      assert.ok((bytes.get(file) ?? 0) > 0, `${variant}: nothing compiled from ${file}`);
    }
    // graphql 17's own source maps leave a few generated lines without a mapping; anything more is ours.
    assert.ok((bytes.get('(not mapped)') ?? 0) <= 512, `${variant}: compiled code the source map does not name`);
    const handlerFiles = [...bytes.keys()].filter((file) => file.startsWith('src/handler/'));
    const graphqlHttpFiles = [...bytes.keys()].filter((file) => file.startsWith('graphql-http/'));
    if (variant === 'graphql-http') {
      assert.equal(handlerFiles.length, 0, 'graphql-http runs none of our handler');
      assert.ok(graphqlHttpFiles.length > 0, 'graphql-http runs its own handler');
    } else {
      assert.ok(handlerFiles.includes('src/handler/create-handler.ts'), `${variant} runs our handler`);
      assert.equal(graphqlHttpFiles.length, 0, `${variant} runs none of graphql-http`);
    }
  }
  // Only the full bundle puts the WebSocket upgrade in front of the handler.
  assert.ok(results[0].bytes.has('src/subscriptions/fetch-upgrade.ts'));
  assert.ok(!results[1].bytes.has('src/subscriptions/fetch-upgrade.ts'));
  assert.match(lazyCompileTable(results), /^\| compiled by a first Q1 GET \| skiff \| skiff, optional parts off \| graphql-http \|$/m);
});
