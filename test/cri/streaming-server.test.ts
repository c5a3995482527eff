// The streaming server's front door, without containers: single-use tokens that expire, the SPDY
// and WebSocket upgrade negotiation and its refusals, seen by real clients over real sockets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect } from 'node:net';
import WebSocket from 'ws';
import { StreamingServer, type StreamingBackend } from '../../node/skiffd/streaming/server.ts';
import { TokenStore } from '../../node/skiffd/streaming/tokens.ts';
import { ResizeDecoder, errorStreamPayload } from '../../node/skiffd/streaming/remotecommand.ts';

/** These tests only knock on the door: reaching a backend is a failure. */
const unreachable: StreamingBackend = {
  exec: async () => assert.fail('exec backend reached'),
  attach: async () => assert.fail('attach backend reached'),
  portForward: async () => assert.fail('port-forward backend reached'),
};

async function server(t: import('node:test').TestContext, now?: () => number) {
  const s = new StreamingServer({ address: '127.0.0.1', port: 0, backend: unreachable, now });
  await s.listen();
  t.after(() => s.close());
  return s;
}

const execRequest = { kind: 'exec' as const, containerId: 'c', cmd: ['true'], tty: false, stdin: false, stdout: true, stderr: true };

/** Sends an upgrade request and returns the status line and headers of the answer. */
function upgrade(
  url: string,
  headers: Record<string, string | string[]>,
  method = 'POST',
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: { Connection: 'Upgrade', ...headers }, timeout: 10_000 });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, headers: res.headers, body: '' });
    });
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', reject);
    req.end();
  });
}

function wsStatus(url: string, protocol: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, [protocol]);
    ws.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.on('open', () => {
      resolve(101);
      ws.terminate();
    });
    ws.on('error', (err) => reject(err));
  });
}

test('tokens: single use, expire after their TTL', () => {
  let now = 1_000;
  const store = new TokenStore<string>(60_000, () => now);
  const a = store.issue('a');
  const b = store.issue('b');
  assert.notEqual(a, b);
  assert.match(a, /^[A-Za-z0-9_-]{20,}$/);
  assert.equal(store.take(a), 'a');
  assert.equal(store.take(a), undefined, 'a token works once');
  now += 60_001;
  assert.equal(store.take(b), undefined, 'an expired token is refused');
  assert.equal(store.take('made-up'), undefined);
});

test('streaming server: expired and reused tokens are refused over SPDY and WebSocket', async (t) => {
  let now = Date.now();
  const s = await server(t, () => now);
  assert.match(s.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const expired = s.issue(execRequest);
  now += 61_000;
  const spdy = await upgrade(expired, { Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': 'v4.channel.k8s.io' });
  assert.equal(spdy.status, 404);
  assert.match(spdy.body, /expired or already used/);

  const fresh = s.issue(execRequest);
  const attachPath = fresh.replace('/exec/', '/attach/');
  assert.equal(
    (await upgrade(attachPath, { Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': 'v4.channel.k8s.io' })).status,
    404,
    'an exec token is no attach token',
  );
  assert.equal(await wsStatus(fresh, 'v4.channel.k8s.io'), 404, 'the failed attempt used the token up');

  const another = s.issue(execRequest);
  now += 61_000;
  assert.equal(await wsStatus(another, 'v5.channel.k8s.io'), 404);
});

test('streaming server: SPDY protocol negotiation and plain requests', async (t) => {
  const s = await server(t);
  const refused = await upgrade(s.issue(execRequest), { Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': ['v9.channel.k8s.io', 'nonsense'] });
  assert.equal(refused.status, 403);
  assert.match(refused.body, /unable to negotiate protocol/);
  assert.equal(refused.headers['x-accept-protocol-version'], 'v4.channel.k8s.io, v3.channel.k8s.io, v2.channel.k8s.io, channel.k8s.io');

  const pf = await upgrade(s.issue({ kind: 'portforward', podSandboxId: 'p', ports: [] }), {
    Upgrade: 'SPDY/3.1',
    'X-Stream-Protocol-Version': 'portforward.k8s.io',
  });
  assert.equal(pf.status, 101);
  assert.equal(pf.headers['x-stream-protocol-version'], 'portforward.k8s.io');
  assert.equal(pf.headers.upgrade, 'SPDY/3.1');

  const plain = await upgrade(s.issue(execRequest), {}, 'GET');
  assert.equal(plain.status, 400);
  assert.match(plain.body, /needs a connection upgrade/);
  assert.equal((await upgrade(`${s.url}/nowhere`, { Upgrade: 'SPDY/3.1' })).status, 404);
  assert.equal(await wsStatus(s.issue(execRequest), 'v9.channel.k8s.io'), 400, 'an unknown WebSocket subprotocol is refused');
  assert.equal(await wsStatus(`${s.issue({ kind: 'portforward', podSandboxId: 'p', ports: [] })}?port=0`, 'v4.channel.k8s.io'), 400, 'port 0 is refused');
});

test('remotecommand: error-stream payloads per protocol version; resize messages split anywhere', () => {
  assert.deepEqual(JSON.parse(errorStreamPayload(4, { exitCode: 0 })!), { metadata: {}, status: 'Success' });
  const failure = JSON.parse(errorStreamPayload(5, { exitCode: 9 })!) as { reason: string; details: { causes: unknown[] } };
  assert.equal(failure.reason, 'NonZeroExitCode');
  assert.deepEqual(failure.details.causes, [{ reason: 'ExitCode', message: '9' }]);
  assert.equal(errorStreamPayload(3, { exitCode: 0 }), undefined, 'before v4, success is silence');
  assert.match(errorStreamPayload(2, { exitCode: 2 })!, /non-zero exit code/);
  assert.equal(errorStreamPayload(1, { error: 'boom' }), 'boom');

  const sizes: string[] = [];
  const d = new ResizeDecoder((s) => sizes.push(`${s.width}x${s.height}`));
  d.push('{"Width":80,"He');
  d.push('ight":24}{"Width":100,"Height":40}\n{"Width":0,"Height":5}{"Width":7');
  d.push(',"Height":8}');
  assert.deepEqual(sizes, ['80x24', '100x40', '7x8']);
});

/** Upgrades to SPDY, sends `bytes`, resolves with what came back once the server closes. */
function spdyThenSend(url: string, protocol: string, bytes: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const socket = connect(Number(target.port), target.hostname);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('the server kept a broken SPDY connection open for 10 s'));
    }, 10_000);
    socket.on('connect', () =>
      socket.write(`POST ${target.pathname} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: ${protocol}\r\n\r\n`),
    );
    let upgraded = false;
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      if (!upgraded && Buffer.concat(chunks).includes('\r\n\r\n')) {
        upgraded = true;
        socket.write(bytes);
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks));
    });
  });
}

test('streaming server: malformed SPDY closes the connection with GOAWAY, never hangs or crashes', async (t) => {
  const s = await server(t);
  // A control frame claiming SPDY version 2.
  const v2 = Buffer.from([0x80, 0x02, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00]);
  const a = await spdyThenSend(s.issue({ kind: 'portforward', podSandboxId: 'p', ports: [] }), 'portforward.k8s.io', v2);
  assert.match(a.toString('latin1'), /^HTTP\/1\.1 101 /);
  const goAway = Buffer.from([0x80, 0x03, 0x00, 0x07]);
  assert.ok(a.includes(goAway), 'a GOAWAY frame before the close');
  // A SYN_STREAM whose header block is not zlib data.
  const body = Buffer.concat([Buffer.from([0, 0, 0, 1, 0, 0, 0, 0, 0, 0]), Buffer.from('not zlib at all')]);
  const head = Buffer.from([0x80, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, body.length]);
  const b = await spdyThenSend(s.issue(execRequest), 'v4.channel.k8s.io', Buffer.concat([head, body]));
  assert.ok(b.includes(goAway), 'a GOAWAY frame before the close');
});
