// The built Node server (dist/server.mjs) run from a directory with no node_modules: its answers, its
// settings from the environment, its refusal of bad ones, and a graceful SIGTERM. Also `npm start`
// passing SIGTERM on to the server.
import { createClient as createSseClient } from 'graphql-sse';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { existsSync, readFileSync } from 'node:fs';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { build, SERVER_NODE_FLAGS } from '../../scripts/build-server.mjs';
import { createCountriesHandler } from '../../src/index.ts';
import { ConfigError, configFromEnv } from '../../node/graphql/config.ts';
import { within } from '../fixtures/ws/clients.ts';
import { killGroup } from '../fixtures/ws/runtimes.ts';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const q1 = '{ country(code: "BR") { name capital currency languages { name } } }';

let dir: string;
let serverFile: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'skiff-server-'));
  // Nothing above the directory may supply packages either.
  for (let d = dir; d !== dirname(d); d = dirname(d)) assert.equal(existsSync(join(d, 'node_modules')), false, `${d}/node_modules exists`);
  const built = join(dir, 'built.mjs');
  await build({ outfile: built, quiet: true });
  serverFile = join(dir, 'server.mjs');
  await copyFile(built, serverFile);
  await rm(built);
});

after(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface Running {
  child: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<number | null>;
}

function spawnServer(env: Record<string, string>, command = process.execPath, args = [serverFile], cwd = dir) {
  // Only what the server reads: no NODE_OPTIONS or npm_* from the test runner's environment.
  const child = spawn(command, args, {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group, so cleanup reaches anything it started (npm start's server too).
    detached: true,
  });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, output: () => output };
}

async function startBuilt(env: Record<string, string> = {}, command?: string, args?: string[], cwd?: string): Promise<Running> {
  const started = spawnServer({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', ...env }, command, args, cwd);
  const url = await within(
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const match = /ready at (http:\/\/\S+\/graphql)/.exec(started.output());
        if (match) resolve(match[1]);
      };
      started.child.stdout!.on('data', check);
      void started.exited.then((code) => reject(new Error(`the server exited with ${code}:\n${started.output()}`)));
    }),
    30_000,
    'the server to print its URL',
  );
  return { ...started, url };
}

function stopLater(t: { after: (fn: () => void) => void }, running: Running | ReturnType<typeof spawnServer>): void {
  t.after(() => killGroup(running.child.pid, 'SIGKILL'));
}

test('settings: each variable is read, and a bad value names its variable', () => {
  const config = configFromEnv({
    PORT: '8080',
    HOST: '::1',
    GRAPHIQL: 'off',
    LOG_LEVEL: 'warn',
    CORS_ORIGINS: 'https://app.example, http://localhost:3000',
    INTROSPECTION: 'false',
    CACHE_MAX_AGE: '300',
    MAX_BODY_BYTES: '2048',
    MAX_DEPTH: '4',
    MAX_TOKENS: '500',
    SHUTDOWN_TIMEOUT: '2.5',
  });
  assert.equal(config.port, 8080);
  assert.equal(config.host, '::1');
  assert.equal(config.graphiql, false);
  assert.equal(config.logLevel, 'warn');
  assert.deepEqual(config.corsOrigins, ['https://app.example', 'http://localhost:3000']);
  assert.equal(config.introspection, false);
  assert.equal(config.cacheMaxAge, 300);
  assert.equal(config.maxBodyBytes, 2048);
  assert.deepEqual(config.limits, { maxDepth: 4, maxTokens: 500 });
  assert.equal(config.shutdownTimeoutMs, 2500);

  const defaults = configFromEnv({});
  assert.equal(defaults.port, 4000);
  assert.equal(defaults.host, undefined);
  assert.equal(defaults.graphiql, true);
  assert.equal(defaults.introspection, true);
  assert.equal(defaults.cacheMaxAge, undefined);
  assert.deepEqual(defaults.corsOrigins, []);
  assert.equal(configFromEnv({ CACHE_MAX_AGE: 'off' }).cacheMaxAge, false);

  const bad: [string, string][] = [
    ['PORT', '65536'],
    ['PORT', '80a'],
    ['GRAPHIQL', 'maybe'],
    ['LOG_LEVEL', 'loud'],
    ['CORS_ORIGINS', '*'],
    ['CORS_ORIGINS', 'https://app.example/'],
    ['CORS_ORIGINS', 'app.example'],
    ['INTROSPECTION', '2'],
    ['CACHE_MAX_AGE', '-1'],
    ['MAX_BODY_BYTES', '0'],
    ['MAX_QUERY_LENGTH', '1e4'],
    ['MAX_TOKENS', 'many'],
    ['MAX_DEPTH', '0'],
    ['MAX_ALIASES', '1.5'],
    ['MAX_LIST_SIZE', '-3'],
    ['SHUTDOWN_TIMEOUT', 'soon'],
  ];
  for (const [variable, value] of bad) {
    assert.throws(
      () => configFromEnv({ [variable]: value }),
      (error: unknown) =>
        error instanceof ConfigError && error.variable === variable && error.message.startsWith(`${variable} `) && error.message.includes(`"${value}"`),
      `${variable}=${value}`,
    );
  }
});

test('dist/server.mjs serves the countries API and GraphiQL with no node_modules, byte-equal to the handler in process', { timeout: 120_000 }, async (t) => {
  const server = await startBuilt();
  stopLater(t, server);
  const inProcess = createCountriesHandler();
  const get = `${server.url}?query=${encodeURIComponent(q1)}`;
  const [remote, local] = [await fetch(get), await inProcess(new Request(get))];
  assert.equal(remote.status, 200);
  assert.equal(remote.headers.get('content-type'), local.headers.get('content-type'));
  assert.equal(remote.headers.get('cache-control'), local.headers.get('cache-control'));
  assert.equal(await remote.text(), await local.text());

  const post = () =>
    new Request(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
      body: JSON.stringify({ query: 'query($c: ID!) { country(code: $c) { code name emoji } }', variables: { c: 'JP' } }),
    });
  const [remotePost, localPost] = [await fetch(post()), await inProcess(post())];
  assert.equal(remotePost.status, 200);
  assert.equal(await remotePost.text(), await localPost.text());

  // @defer to a multipart client (Apollo Client's Accept), and a query from graphql-sse's client, which
  // accepts nothing but server-sent events: streamed like the handler in process streams them.
  for (const [accept, query] of [
    ['multipart/mixed;deferSpec=20220824, application/json', '{ country(code: "DE") { name ... @defer { capital } } }'],
    ['text/event-stream', '{ country(code: "DE") { name } }'],
  ]) {
    const streamed = () =>
      new Request(server.url, { method: 'POST', headers: { 'content-type': 'application/json', accept }, body: JSON.stringify({ query }) });
    const [remoteStream, localStream] = [await fetch(streamed()), await inProcess(streamed())];
    assert.equal(remoteStream.headers.get('content-type'), localStream.headers.get('content-type'), accept);
    assert.equal(await remoteStream.text(), await localStream.text(), accept);
  }
  const sse = createSseClient({ url: server.url, retryAttempts: 0 });
  try {
    for await (const result of sse.iterate({ query: '{ country(code: "NO") { capital } }' })) {
      assert.deepEqual(result, { data: { country: { capital: 'Oslo' } } });
    }
  } finally {
    sse.dispose();
  }

  const page = await fetch(server.url, { headers: { accept: 'text/html' } });
  assert.equal(page.status, 200);
  assert.match(await page.text(), /graphiql\.min\.js/);
  const require = createRequire(import.meta.url);
  for (const [asset, pkg, file] of [
    ['graphiql.min.js', 'graphiql', 'graphiql.min.js'],
    ['graphql-sse.min.js', 'graphql-sse', 'umd/graphql-sse.min.js'],
    ['react-dom.production.min.js', 'react-dom', 'umd/react-dom.production.min.js'],
  ]) {
    const served = await fetch(new URL(`/graphiql/${asset}`, server.url));
    assert.equal(served.status, 200, asset);
    const expected = readFileSync(join(dirname(require.resolve(`${pkg}/package.json`)), file));
    assert.ok(Buffer.from(await served.arrayBuffer()).equals(expected), `${asset} differs from ${pkg}/${file}`);
  }

  // Probes are on in the server: liveness and readiness for Kubernetes and load balancers.
  for (const probe of ['/healthz', '/readyz']) {
    const res = await fetch(new URL(probe, server.url));
    assert.equal(res.status, 200, probe);
    assert.deepEqual(await res.json(), { status: 'ok' });
  }

  server.child.kill('SIGTERM');
  assert.equal(await within(server.exited, 15_000, 'the server to exit on SIGTERM'), 0);
});

test('dist/server.mjs applies the operator settings from the environment', { timeout: 120_000 }, async (t) => {
  const server = await startBuilt({
    GRAPHIQL: 'off',
    CORS_ORIGINS: 'https://app.example',
    INTROSPECTION: 'off',
    CACHE_MAX_AGE: '7',
    MAX_DEPTH: '2',
    MAX_BODY_BYTES: '200',
  });
  stopLater(t, server);

  const page = await fetch(server.url, { headers: { accept: 'text/html' } });
  assert.notEqual(page.headers.get('content-type')?.startsWith('text/html'), true, 'GraphiQL is off');
  await page.body?.cancel();

  const preflight = await fetch(server.url, {
    method: 'OPTIONS',
    headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
  });
  assert.equal(preflight.status, 204);
  assert.equal(preflight.headers.get('access-control-allow-origin'), 'https://app.example');
  const foreign = await fetch(server.url, { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } });
  assert.equal(foreign.status, 403);
  await foreign.body?.cancel();

  const cached = await fetch(`${server.url}?query=${encodeURIComponent('{ country(code: "BR") { name } }')}`);
  assert.equal(cached.status, 200);
  assert.equal(cached.headers.get('cache-control'), 'public, max-age=7');
  await cached.body?.cancel();

  const introspection = await (await fetch(`${server.url}?query=${encodeURIComponent('{ __schema { queryType { name } } }')}`)).json();
  assert.ok(introspection.errors?.length > 0, 'introspection is refused');

  const deep = await (await fetch(`${server.url}?query=${encodeURIComponent('{ country(code: "BR") { continent { countries { name } } } }')}`)).json();
  assert.equal(deep.errors?.[0]?.extensions?.limit, 'maxDepth');

  const big = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: `{ country(code: "BR") { name } } ${'#'.repeat(300)}` }),
  });
  assert.equal(big.status, 413);
  await big.body?.cancel();

  server.child.kill('SIGTERM');
  assert.equal(await within(server.exited, 15_000, 'the server to exit on SIGTERM'), 0);
});

test('dist/server.mjs exits 2 on a bad setting, naming the variable', { timeout: 120_000 }, async () => {
  for (const [variable, value] of [
    ['PORT', 'eighty'],
    ['GRAPHIQL', 'maybe'],
    ['CORS_ORIGINS', '*'],
    ['MAX_DEPTH', '0'],
    ['SHUTDOWN_TIMEOUT', 'soon'],
  ]) {
    const run = spawnServer({ PORT: '0', HOST: '127.0.0.1', [variable]: value });
    const code = await within(run.exited, 20_000, `the server to exit on ${variable}=${value}`).finally(() => killGroup(run.child.pid, 'SIGKILL'));
    assert.equal(code, 2, `${variable}=${value}:\n${run.output()}`);
    assert.match(run.output(), new RegExp(`^Invalid setting: ${variable} must .*"${value.replace(/[*]/g, '\\*')}"`, 'm'));
  }
});

/** Sends a POST's headers and the first half of its body; `finish` sends the rest and reads the answer. */
function halfSentPost(url: string, body: string): Promise<{ finish: () => Promise<string> }> {
  const { hostname, port, pathname } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      const head = `POST ${pathname} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
      const half = body.length >> 1;
      socket.write(head + body.slice(0, half));
      let response = '';
      socket.on('data', (chunk: Buffer) => (response += chunk.toString()));
      const ended = new Promise<string>((done) => socket.once('close', () => done(response)));
      resolve({
        finish: () => {
          socket.write(body.slice(half));
          return within(ended, 10_000, 'the drained request to be answered and its connection closed');
        },
      });
    });
    socket.once('error', reject);
  });
}

test('SIGTERM: a request in flight is answered, WebSockets close with 1001, new connections are refused, exit 0', { timeout: 120_000 }, async (t) => {
  const server = await startBuilt({ LOG_LEVEL: 'info', SHUTDOWN_TIMEOUT: '20' });
  stopLater(t, server);

  const socket = new WebSocket(server.url.replace(/^http/, 'ws'), 'graphql-transport-ws');
  const acked = new Promise<void>((resolve, reject) => {
    socket.once('message', (data) => (JSON.parse(String(data)).type === 'connection_ack' ? resolve() : reject(new Error(String(data)))));
    socket.once('error', reject);
  });
  const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
  socket.once('open', () => socket.send(JSON.stringify({ type: 'connection_init' })));
  await within(acked, 10_000, 'connection_ack');

  const inFlight = await halfSentPost(server.url, JSON.stringify({ query: '{ country(code: "FR") { name } }' }));
  server.child.kill('SIGTERM');
  await within(
    new Promise<void>((resolve) => {
      const check = () => server.output().includes('SIGTERM: finishing') && resolve();
      check();
      server.child.stdout!.on('data', check);
    }),
    10_000,
    'the server to start shutting down',
  );
  assert.equal(await within(closed, 10_000, 'the WebSocket to be closed'), 1001);
  const { port } = new URL(server.url);
  await assert.rejects(fetch(`http://127.0.0.1:${port}/graphql?query={__typename}`), 'new connections are refused');
  assert.equal(server.child.exitCode, null, 'the server waits for the request in flight');

  const response = await inFlight.finish();
  assert.match(response, /^HTTP\/1\.1 200 /);
  assert.ok(response.endsWith('{"data":{"country":{"name":"France"}}}'), response);
  assert.equal(await within(server.exited, 10_000, 'the server to exit once drained'), 0);
});

test('SIGTERM past SHUTDOWN_TIMEOUT cuts the connections still open and exits 1', { timeout: 60_000 }, async (t) => {
  const server = await startBuilt({ SHUTDOWN_TIMEOUT: '0.5' });
  stopLater(t, server);
  const stuck = await halfSentPost(server.url, JSON.stringify({ query: '{ country(code: "FR") { name } }' }));
  server.child.kill('SIGTERM');
  const code = await within(server.exited, 10_000, 'the server to exit');
  assert.equal(code, 1, `exit code ${code}, signal ${server.child.signalCode}; output:\n${server.output()}`);
  assert.match(server.output(), /SHUTDOWN_TIMEOUT/);
  assert.equal(await stuck.finish().catch(() => ''), '');
});

test('npm start runs the server with the Node flags the image and the docs give it', () => {
  const start = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  assert.ok(SERVER_NODE_FLAGS.length > 0);
  for (const flag of SERVER_NODE_FLAGS) {
    assert.ok(start.split(' ').includes(flag), `package.json's start script lacks ${flag}: ${start}`);
    assert.ok(readFileSync(join(repoRoot, 'docs/graphql/running.md'), 'utf8').includes(`node ${flag} `), `docs/graphql/running.md does not show ${flag}`);
  }
});

test('npm start passes SIGTERM on to the server, which drains and exits: nothing is left running', { timeout: 120_000 }, async (t) => {
  const npm = await startBuilt({ npm_config_update_notifier: 'false' }, 'npm', ['start', '--silent'], repoRoot);
  stopLater(t, npm);
  assert.equal((await fetch(`${npm.url}?query={__typename}`)).status, 200);
  npm.child.kill('SIGTERM');
  await within(npm.exited, 15_000, 'npm start to exit on SIGTERM');
  // The server itself must be gone too, not orphaned and still listening.
  const deadline = Date.now() + 10_000;
  let listening = true;
  while (listening && Date.now() < deadline) {
    listening = await fetch(`${npm.url}?query={__typename}`).then(
      async (r) => {
        await r.body?.cancel();
        return true;
      },
      () => false,
    );
    if (listening) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.equal(listening, false, 'the server still answers after npm start exited');
});
