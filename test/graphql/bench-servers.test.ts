// The bench compares servers on the same data: each bench server (our dev server, Mercurius with
// graphql-jit, yoga, Apollo, the raw Hono ceiling, the opt-in shell) must answer the bench queries with the data
// graphql-js gives. No timing here; `npm run bench` measures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { benchQueries, getPath, postBody } from '../../bench/graphql/queries.ts';
import { benchServers, expectedBodies } from '../../bench/graphql/servers.ts';
import { startServerProcess } from '../../bench/graphql/http-bench.ts';
import { within } from '../support/graphql-fixtures.ts';

const expected = expectedBodies();

for (const server of benchServers) {
  test(`bench server ${server.name} answers the bench queries with graphql-js's data`, { timeout: 90_000 }, async (t) => {
    // In its own process, as the bench runs it (Mercurius's on graphql 16).
    const running = await startServerProcess(server.name, 60_000);
    t.after(() => within(10_000, `${server.name} did not stop`, running.stop()));
    const origin = `http://127.0.0.1:${running.port}`;
    for (const q of benchQueries) {
      // Twice: Mercurius compiles with graphql-jit from the second run of a query on.
      for (let attempt = 0; attempt < 2; attempt++) {
        const response = await fetch(q.method === 'GET' ? origin + getPath('/graphql', q.query) : `${origin}/graphql`, {
          method: q.method,
          headers: q.method === 'GET' ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
          body: q.method === 'POST' ? postBody(q) : undefined,
          signal: AbortSignal.timeout(15_000),
        });
        assert.equal(response.status, 200, `${server.name} ${q.label}`);
        assert.deepEqual(JSON.parse(await response.text()), JSON.parse(expected.get(q.id)!), `${server.name} ${q.label}`);
      }
    }
  });
}

test('our server answers the bench queries byte for byte as graphql-js does', { timeout: 60_000 }, async (t) => {
  const skiff = benchServers.find((s) => s.name === 'skiff')!;
  const running = await within(30_000, 'skiff did not start', skiff.start());
  t.after(() => within(10_000, 'skiff did not stop', running.close()));
  for (const q of benchQueries) {
    const origin = `http://127.0.0.1:${running.port}`;
    const response = await fetch(q.method === 'GET' ? origin + getPath('/graphql', q.query) : `${origin}/graphql`, {
      method: q.method,
      headers: { 'content-type': 'application/json' },
      body: q.method === 'POST' ? postBody(q) : undefined,
      signal: AbortSignal.timeout(15_000),
    });
    assert.equal(await response.text(), expected.get(q.id), q.label);
  }
});
