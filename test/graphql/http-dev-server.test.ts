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

test('small POST bodies read ahead by the server: the handler answers them, any other handler still reads its body, and large, chunked and cut-off bodies are served as before', {
  timeout: 60_000,
}, async (t) => {
  const { request: httpRequest } = await import('node:http');
  const { connect } = await import('node:net');
  const handler = createGraphQLHandler({ schema: createTestSchema().schema });
  const calls: (string | undefined)[] = [];
  // The handler's fetch, seen from outside: whether the server handed it the body it read.
  const spy = Object.assign((request: Request) => handler(request), {
    fetch: (request: Request, body?: string) => {
      calls.push(body);
      return handler.fetch(request, body);
    },
  });
  const graphql = await startServer({ handler: spy, port: 0, hostname: '127.0.0.1' });
  t.after(() => graphql.close());
  // A plain fetch-style handler that reads the body itself (a test's, or any route but GraphQL).
  const echo = await startServer({
    handler: async (request) => new Response(`${request.method} ${(await request.text()).length}`),
    port: 0,
    hostname: '127.0.0.1',
  });
  t.after(() => echo.close());

  const post = (url: string, body: string) =>
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(15_000) });
  const small = JSON.stringify({ query: '{ hello }' });
  const answered = await post(graphql.url, small);
  assert.equal(answered.status, 200);
  assert.deepEqual(await answered.json(), { data: { hello: 'Hello, world' } });
  assert.deepEqual(calls, [small], 'the handler got the body the server read');

  // Over the read-ahead size: the handler reads the request's own body, and still answers.
  const large = `${small}${' '.repeat(70_000)}`;
  const big = await post(graphql.url, large);
  assert.equal(big.status, 200);
  assert.deepEqual(await big.json(), { data: { hello: 'Hello, world' } });
  assert.equal(calls.at(-1), undefined);

  // A UTF-8 byte-order mark before the JSON is decoded away, as Request.text() does: read ahead or not,
  // small or large, the same answer.
  for (const [what, body] of [
    ['small', small],
    ['large', large],
  ]) {
    const marked = await post(graphql.url, `\uFEFF${body}`);
    assert.equal(marked.status, 200, `a ${what} body with a byte-order mark: ${await marked.clone().text()}`);
    assert.deepEqual(await marked.json(), { data: { hello: 'Hello, world' } });
  }
  assert.equal(calls.at(-2), small, 'the read-ahead body reaches the handler without its mark');

  // Chunked, with no length: streamed as before.
  const chunked = await new Promise<string>((resolve, reject) => {
    const req = httpRequest(graphql.url, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c: string) => (text += c));
      res.on('end', () => resolve(text));
    });
    req.on('error', reject);
    req.write(small.slice(0, 5));
    req.end(small.slice(5));
  });
  assert.deepEqual(JSON.parse(chunked), { data: { hello: 'Hello, world' } });
  assert.equal(calls.at(-1), undefined);

  // A handler that reads the body itself gets all of it, read ahead or not.
  assert.equal(await (await post(echo.url, small)).text(), `POST ${small.length}`);
  assert.equal(await (await post(echo.url, large)).text(), `POST ${large.length}`);

  // A client that declares a body, sends half and leaves: nothing hangs or crashes, and the server serves on.
  await new Promise<void>((resolve, reject) => {
    const { port } = new URL(graphql.url);
    const socket = connect(Number(port), '127.0.0.1', () => {
      socket.write(`POST /graphql HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${small.length}\r\n\r\n${small.slice(0, 6)}`);
      setImmediate(() => socket.destroy());
    });
    socket.on('close', () => resolve());
    socket.on('error', reject);
  });
  const after = await post(graphql.url, small);
  assert.deepEqual(await after.json(), { data: { hello: 'Hello, world' } });
});

test('reading a small body ahead makes no function per request: every request gets the same listeners', { timeout: 30_000 }, async (t) => {
  const { createServer } = await import('node:http');
  const { readingSmallBodies } = await import('../../node/graphql/small-bodies.ts');
  const seen: unknown[][] = [];
  const server = createServer(
    readingSmallBodies((incoming, outgoing) => {
      seen.push(['data', 'end', 'error', 'close'].flatMap((event) => incoming.listeners(event)));
      outgoing.end('ok');
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as import('node:net').AddressInfo;
  for (const body of ['{"query":"{ a }"}', '{"query":"{ b }"}']) {
    const response = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body, signal: AbortSignal.timeout(10_000) });
    assert.equal(await response.text(), 'ok');
  }
  assert.equal(seen.length, 2);
  assert.ok(seen[0].length >= 4, `the reader listens for data, end, error and close (saw ${seen[0].length} listeners)`);
  assert.deepEqual(seen[1], seen[0], 'the second request got the very functions the first did');
});
