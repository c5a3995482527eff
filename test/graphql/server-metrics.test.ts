// Prometheus metrics of the Node server, scraped over a real socket: requests by operation type and
// status, the duration histogram, document-cache hits and misses, open subscriptions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startServer } from '../../node/graphql/app.ts';
import { createMetrics } from '../../node/graphql/metrics.ts';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import { createChatSchema } from '../../examples/chat/schema.ts';
import { MESSAGE_ADDED, RecordedSubscription, graphqlWsClient, postMessage, prime, until, within } from '../fixtures/ws/clients.ts';
import { killGroup } from '../fixtures/ws/runtimes.ts';
import { SSE, StreamRead } from '../fixtures/streams/clients.ts';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** Sample values by series (`name{labels}` as printed), from the Prometheus text format. */
function samples(text: string): Map<string, number> {
  const values = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    values.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return values;
}

async function scrape(url: string): Promise<Map<string, number>> {
  const response = await fetch(url);
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return samples(await response.text());
}

test('/metrics counts requests by operation type and status, times them, counts document-cache hits and misses and open subscriptions', {
  timeout: 60_000,
}, async (t) => {
  const metrics = createMetrics();
  const schema = createChatSchema();
  const handler = createGraphQLHandler({ schema, onResponse: metrics.onResponse });
  const server = await startServer({ handler, port: 0, hostname: '127.0.0.1', metrics, subscriptions: { schema } });
  t.after(() => server.close());
  const metricsUrl = new URL('/metrics', server.url).href;

  const query = `${server.url}?query=${encodeURIComponent('{ __typename }')}`;
  for (let i = 0; i < 3; i++) assert.equal((await fetch(query)).status, 200);
  assert.equal((await postMessage(server.url, 'lobby', 'hello')).status, 200);
  const syntaxError = await fetch(`${server.url}?query=${encodeURIComponent('{ nope')}`, {
    headers: { accept: 'application/graphql-response+json' },
  });
  assert.equal(syntaxError.status, 400);
  await syntaxError.body?.cancel();
  const missing = await fetch(new URL('/nowhere', server.url));
  assert.equal(missing.status, 404);
  await missing.body?.cancel();

  let m = await scrape(metricsUrl);
  assert.equal(m.get('graphql_http_requests_total{operation_type="query",status="200"}'), 3);
  assert.equal(m.get('graphql_http_requests_total{operation_type="mutation",status="200"}'), 1);
  assert.equal(m.get('graphql_http_requests_total{operation_type="none",status="400"}'), 1);
  assert.equal(m.get('graphql_http_requests_total{operation_type="none",status="404"}'), 1);
  assert.equal(m.get('graphql_http_request_duration_seconds_count{operation_type="query"}'), 3);
  assert.equal(m.get('graphql_http_request_duration_seconds_bucket{le="+Inf",operation_type="query"}'), 3);
  assert.ok((m.get('graphql_http_request_duration_seconds_sum{operation_type="query"}') ?? 0) > 0);
  // { __typename } once missed then twice hit; the mutation and the syntax error each missed once.
  assert.equal(m.get('graphql_document_cache_requests_total{result="hit"}'), 2);
  assert.equal(m.get('graphql_document_cache_requests_total{result="miss"}'), 3);
  assert.equal(m.get('graphql_subscriptions_open'), 0);
  assert.ok(m.has('process_cpu_user_seconds_total'), 'process metrics are exported');
  assert.equal(
    [...m.keys()].some((k) => k.includes('/metrics')),
    false,
  );

  const client = graphqlWsClient(server.url.replace(/^http/, 'ws'));
  const first = new RecordedSubscription(client, MESSAGE_ADDED, { room: 'a' });
  const second = new RecordedSubscription(client, MESSAGE_ADDED, { room: 'b' });
  await prime(first, server.url, 'a');
  await prime(second, server.url, 'b');
  assert.equal((await scrape(metricsUrl)).get('graphql_subscriptions_open'), 2);
  // Counting them does not turn shared execution off: both run on the shared path.
  assert.deepEqual(server.webSocketServer?.subscriptionStats(), { executions: 2, members: 2, open: 2 });

  second.unsubscribe();
  await until(async () => (await scrape(metricsUrl)).get('graphql_subscriptions_open') === 1, 5000, 'one subscription to be counted closed');
  await client.dispose();
  await until(async () => (await scrape(metricsUrl)).get('graphql_subscriptions_open') === 0, 5000, 'the socket close to release the other');

  // A subscription over server-sent events counts too, until its client leaves.
  const stream = await StreamRead.open(server.url, { query: MESSAGE_ADDED, variables: { room: 'sse' }, accept: SSE });
  assert.equal((await scrape(metricsUrl)).get('graphql_subscriptions_open'), 1);
  stream.abort();
  await until(async () => (await scrape(metricsUrl)).get('graphql_subscriptions_open') === 0, 5000, 'the stream to be counted closed');

  m = await scrape(metricsUrl);
  assert.ok((m.get('graphql_http_requests_total{operation_type="mutation",status="200"}') ?? 0) >= 3, 'the priming mutations are counted');
});

test('the Node server serves /metrics only with METRICS=on', { timeout: 60_000 }, async (t) => {
  for (const [value, status] of [
    ['on', 200],
    ['', 404],
  ] as const) {
    const child = spawn(process.execPath, ['--import', 'tsx', 'node/graphql/serve.ts'], {
      cwd: repoRoot,
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', METRICS: value },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    t.after(() => killGroup(child.pid, 'SIGKILL'));
    let output = '';
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const url = await within(
      new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (c: Buffer) => {
          output += c.toString();
          const match = /ready at (http:\/\/\S+\/graphql)/.exec(output);
          if (match) resolve(match[1]);
        });
        child.once('exit', (code) => reject(new Error(`serve.ts exited with ${code}:\n${output}`)));
      }),
      30_000,
      'serve.ts to print its URL',
    );
    await fetch(`${url}?query=${encodeURIComponent('{ country(code: "BR") { name } }')}`).then((r) => r.text());
    const response = await fetch(new URL('/metrics', url));
    assert.equal(response.status, status, `METRICS=${value}`);
    const text = await response.text();
    if (status === 200) assert.equal(samples(text).get('graphql_http_requests_total{operation_type="query",status="200"}'), 1);
    killGroup(child.pid, 'SIGTERM');
  }
});
