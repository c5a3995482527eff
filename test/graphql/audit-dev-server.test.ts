// graphql-http's server audits against the countries dev server over a real socket.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import countries from '../../src/index.ts';
import { startServer } from '../../node/graphql/app.ts';
import { describeFailures, runServerAudits } from '../support/graphql-fixtures.ts';

test('every graphql-http server audit passes against the dev server', { timeout: 120_000 }, async (t) => {
  const server = await startServer({ handler: countries.fetch, port: 0, hostname: '127.0.0.1' });
  t.after(() => server.close());
  const results = await runServerAudits(server.url, fetch);
  const failures = describeFailures(results);
  if (failures.length > 0) console.log(`audit failures:\n${failures.join('\n')}`);
  assert.deepEqual(failures, []);
  assert.equal(results.length, 61, 'graphql-http ships 61 server audits');
});
