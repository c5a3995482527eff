// The dev server's structured request log: one JSON line per request, off unless asked for.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startServer } from '../../node/graphql/app.ts';
import { createRequestLog, logLevelFrom, type RequestLogEntry } from '../../node/graphql/logging.ts';
import { createCountriesHandler } from '../../src/index.ts';
import { within } from '../support/graphql-fixtures.ts';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

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

/** Runs `npm start`'s script on a free port with extra arguments; resolves once it prints its URL. */
async function serveScript(t: TestContext, args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'node/graphql/serve.ts', ...args], {
    cwd: repoRoot,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const url = await within(
    20_000,
    'serve.ts did not print its URL',
    new Promise<string>((resolve, reject) => {
      child.stdout.on('data', () => {
        const match = /(http:\/\/\S+\/graphql)/.exec(stdout);
        if (match) resolve(match[1]);
      });
      child.once('exit', (code) => reject(new Error(`serve.ts exited with ${code}:\n${stdout}`)));
    }),
  );
  return { url, output: () => stdout };
}

async function askCapital(url: string) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: 'query Capital { country(code: "BR") { capital } }' }),
  });
  assert.equal(res.status, 200);
  await res.arrayBuffer();
}

test('npm start logs a JSON line per request; --quiet and LOG_LEVEL=silent keep it silent', { timeout: 90_000 }, async (t) => {
  const loud = await serveScript(t, []);
  await askCapital(loud.url);
  const line = await within(
    10_000,
    'no request line on stdout',
    new Promise<string>((resolve) => {
      const check = setInterval(() => {
        const found = loud
          .output()
          .split('\n')
          .find((l) => l.startsWith('{'));
        if (found) {
          clearInterval(check);
          resolve(found);
        }
      }, 20);
    }),
  );
  const entry = JSON.parse(line) as RequestLogEntry;
  assert.deepEqual([entry.method, entry.path, entry.status, entry.operationName], ['POST', '/graphql', 200, 'Capital']);

  for (const [args, env] of [
    [['--quiet'], {}],
    [[], { LOG_LEVEL: 'silent' }],
  ] as const) {
    const quiet = await serveScript(t, [...args], env);
    await askCapital(quiet.url);
    // The ready line is printed before the server answers; a request line would follow the response.
    await askCapital(quiet.url);
    assert.ok(!quiet.output().includes('"msg":"request"'), quiet.output());
  }
});
