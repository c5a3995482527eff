// The Node dev server (Hono on @hono/node-server) over real sockets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startServer } from '../../node/graphql/app.ts';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import { createTestSchema, within } from '../support/graphql-fixtures.ts';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const q1 = '{ country(code: "BR") { name capital currency languages { name } } }';

function runServeScript(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'node/graphql/serve.ts'], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, output: () => output };
}

test('npm start (node/graphql/serve.ts) prints its URL and serves the countries API there', { timeout: 120_000 }, async (t) => {
  const server = runServeScript({ PORT: '0', HOST: '127.0.0.1' });
  t.after(() => {
    if (server.child.exitCode === null) server.child.kill('SIGKILL');
  });
  const url = await within(
    20_000,
    'serve.ts did not print its URL',
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const match = /(http:\/\/\S+\/graphql)/.exec(server.output());
        if (match) resolve(match[1]);
      };
      server.child.stdout.on('data', check);
      server.exited.then((code) => reject(new Error(`serve.ts exited with ${code}:\n${server.output()}`)));
    }),
  );
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/graphql$/);

  const viaGet = await fetch(`${url}?query=${encodeURIComponent(q1)}`);
  assert.equal(viaGet.status, 200);
  const body = await viaGet.json();
  assert.equal(body.data.country.name, 'Brazil');
  assert.deepEqual(Object.keys(body.data.country), ['name', 'capital', 'currency', 'languages']);

  const viaPost = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
    body: JSON.stringify({ query: 'query($c: ID!) { country(code: $c) { code } }', variables: { c: 'BR' } }),
  });
  assert.equal(viaPost.status, 200);
  assert.match(viaPost.headers.get('content-type') ?? '', /^application\/graphql-response\+json/);
  assert.deepEqual(await viaPost.json(), { data: { country: { code: 'BR' } } });

  assert.equal((await fetch(new URL('/', url))).status, 404);

  server.child.kill('SIGTERM');
  assert.equal(await within(10_000, 'serve.ts did not exit on SIGTERM', server.exited), 0);
});

test('serve.ts refuses a malformed PORT with a clear message', { timeout: 120_000 }, async () => {
  const server = runServeScript({ PORT: 'eighty' });
  const code = await within(20_000, 'serve.ts did not exit', server.exited);
  assert.equal(code, 2);
  assert.match(server.output(), /PORT must be an integer from 0 to 65535 \(got "eighty"\)/);
});

test('the dev server carries the handler behaviour over a real socket', { timeout: 120_000 }, async (t) => {
  const { schema, counter } = createTestSchema();
  const server = await startServer({
    handler: createGraphQLHandler({ schema, maxBodyBytes: 1000 }),
    port: 0,
    hostname: '127.0.0.1',
  });
  t.after(() => server.close());
  const { url } = server;

  const mutationOverGet = await fetch(`${url}?query=${encodeURIComponent('mutation { increment }')}`);
  assert.equal(mutationOverGet.status, 405);
  assert.equal(mutationOverGet.headers.get('allow'), 'POST');
  const mutation = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: 'mutation { increment(by: 5) }' }),
  });
  assert.deepEqual(await mutation.json(), { data: { increment: 5 } });
  assert.equal(counter(), 5);

  const order = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ b item { y id } a }' }),
  });
  assert.equal(await order.text(), '{"data":{"b":2,"item":{"y":"why","id":"item-1"},"a":1}}');

  const tooBig = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: `{ a }${' '.repeat(2000)}` }),
  });
  assert.equal(tooBig.status, 413);
  await tooBig.arrayBuffer();

  // No Content-Length: a chunked body is counted as it arrives.
  const chunked = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: new ReadableStream({
      start(controller) {
        for (let i = 0; i < 5; i++) controller.enqueue(new TextEncoder().encode(' '.repeat(400)));
        controller.close();
      },
    }),
    duplex: 'half',
  } as RequestInit);
  assert.equal(chunked.status, 413);
  await chunked.arrayBuffer();

  const malformed = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query"' });
  assert.equal(malformed.status, 400);
  assert.match((await malformed.json()).errors[0].message, /Unparsable JSON body/);

  const notFound = await fetch(new URL('/elsewhere', url));
  assert.equal(notFound.status, 404);
  await notFound.arrayBuffer();
});

test('the dev server asks the kernel for a deep accept queue, and takes a backlog option', { timeout: 60_000 }, async (t) => {
  // The listening socket's Send-Q in `ss` is its accept-queue limit: min(backlog, net.core.somaxconn).
  const somaxconn = Number(readFileSync('/proc/sys/net/core/somaxconn', 'utf8'));
  const limit = (port: number) =>
    new Promise<number>((resolve, reject) => {
      execFile('ss', ['-Hltn', `sport = :${port}`], (error, stdout) => {
        if (error) return reject(new Error(`ss (iproute2) failed: ${error.message}`));
        const fields = stdout.trim().split(/\s+/);
        resolve(Number(fields[2]));
      });
    });
  for (const [backlog, expected] of [
    [undefined, Math.min(4096, somaxconn)],
    [64, 64],
  ] as const) {
    const server = await startServer({ handler: createGraphQLHandler({ schema: createTestSchema().schema }), port: 0, hostname: '127.0.0.1', backlog });
    t.after(() => server.close());
    assert.equal(await limit(server.port), expected, `backlog ${backlog ?? 'default'}`);
  }
});
