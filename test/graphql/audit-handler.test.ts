// graphql-http's GraphQL-over-HTTP server audits against the handler in-process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import { createTestSchema, describeFailures, runServerAudits } from '../support/graphql-fixtures.ts';

test('every graphql-http server audit passes in-process', { timeout: 120_000 }, async () => {
  const handler = createGraphQLHandler({ schema: createTestSchema().schema });
  const results = await runServerAudits('http://localhost/graphql', (input, init) => handler(new Request(input, init)));
  const failures = describeFailures(results);
  if (failures.length > 0) console.log(`audit failures:\n${failures.join('\n')}`);
  assert.deepEqual(failures, []);
  assert.equal(results.length, 61, 'graphql-http ships 61 server audits');
});
