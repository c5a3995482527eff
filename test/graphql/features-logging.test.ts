// The dev server's structured request log: one JSON line per request, off unless asked for.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../../node/graphql/app.ts';
import { createRequestLog, logLevelFrom, type RequestLogEntry } from '../../node/graphql/logging.ts';
import { createCountriesHandler } from '../../src/index.ts';

test('one JSON line per request: method, path, status, duration and operation name', async (t) => {
  const lines: string[] = [];
  const log = createRequestLog({ level: 'info', write: (line) => lines.push(line) });
  assert.ok(log);
  const handler = createCountriesHandler({ onResponse: log.onResponse });
  const server = await startServer({ handler, port: 0, hostname: '127.0.0.1', log });
  t.after(() => server.close());

  const named = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: 'query Capital { country(code: "BR") { capital } }' }),
  });
  assert.equal(named.status, 200);
  await named.arrayBuffer();
  const byParam = await fetch(`${server.url}?query=${encodeURIComponent('query A { __typename } query B { __typename }')}&operationName=B`);
  await byParam.arrayBuffer();
  const anonymous = await fetch(`${server.url}?query=${encodeURIComponent('{ __typename }')}`);
  await anonymous.arrayBuffer();
  const missing = await fetch(new URL('/nowhere', server.url));
  await missing.arrayBuffer();

  assert.equal(lines.length, 4, lines.join('\n'));
  const entries = lines.map((line) => JSON.parse(line) as RequestLogEntry);
  assert.deepEqual(
    entries.map(({ method, path, status, operationName }) => ({ method, path, status, operationName })),
    [
      { method: 'POST', path: '/graphql', status: 200, operationName: 'Capital' },
      { method: 'GET', path: '/graphql', status: 200, operationName: 'B' },
      { method: 'GET', path: '/graphql', status: 200, operationName: undefined },
      { method: 'GET', path: '/nowhere', status: 404, operationName: undefined },
    ],
  );
  for (const entry of entries) {
    assert.equal(entry.level, 'info');
    assert.equal(entry.msg, 'request');
    assert.ok(Number.isFinite(entry.durationMs) && entry.durationMs >= 0);
    assert.ok(!Number.isNaN(Date.parse(entry.time)));
  }
});

test('quiet unless asked: no log by default, LOG_LEVEL and --quiet choose the level', () => {
  assert.equal(createRequestLog({ level: 'silent' }), null);
  assert.equal(createRequestLog({ level: 'warn' }), null);
  assert.ok(createRequestLog({ level: 'debug', write: () => {} }));
  assert.equal(logLevelFrom(undefined, []), 'info');
  assert.equal(logLevelFrom('WARN', []), 'warn');
  assert.equal(logLevelFrom('debug', ['--quiet']), 'silent');
  assert.throws(() => logLevelFrom('loud', []), /LOG_LEVEL must be one of silent, error, warn, info, debug \(got "loud"\)/);
});
