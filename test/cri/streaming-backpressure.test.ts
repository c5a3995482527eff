// Back-pressure over WebSocket: a client that sends faster than the command (or the forwarded
// port) reads must be slowed down by TCP, not buffered in skiffd. The backends here hold their
// input unread, then read it all: skiffd's buffered bytes stay bounded meanwhile (it stopped
// reading the WebSocket), and every byte arrives once the reader reads.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Duplex, Readable } from 'node:stream';
import WebSocket from 'ws';
import { StreamingServer, type StreamingBackend } from '../../node/skiffd/streaming/server.ts';
import { until } from '../support/wait.ts';

const CHUNK = 64 * 1024;
const TOTAL = 32 * 1024 * 1024;
/** What skiffd may hold for a reader that does not read: its streams' buffers, far below TOTAL. */
const BOUND = 1024 * 1024;

/** Counts WebSocket.pause() calls in this process (the server's sockets use the same `ws`). */
function countPauses(t: import('node:test').TestContext): () => number {
  let pauses = 0;
  const original = WebSocket.prototype.pause;
  WebSocket.prototype.pause = function (this: WebSocket) {
    pauses++;
    return original.call(this);
  };
  t.after(() => {
    WebSocket.prototype.pause = original;
  });
  return () => pauses;
}

function buffered(s: Readable | Duplex): number {
  return s.readableLength + ((s as Duplex).writableLength ?? 0);
}

async function flood(ws: WebSocket, channel: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const body = Buffer.alloc(CHUNK + 1, 0x61);
  body[0] = channel;
  for (let sent = 0; sent < TOTAL; sent += CHUNK) ws.send(body);
}

test('WebSocket exec: stdin the command does not read stops skiffd reading the client; it all arrives once read', { timeout: 120_000 }, async (t) => {
  const pauses = countPauses(t);
  let stdin: Readable | undefined;
  let received = 0;
  let read = () => {};
  const readAll = new Promise<void>((resolve) => (read = resolve));
  const backend: StreamingBackend = {
    exec: async (_request, io) => {
      stdin = io.stdin;
      await readAll; // the command is busy: it does not read its stdin yet
      await new Promise<void>((resolve) => {
        io.stdin!.on('data', (d: Buffer) => {
          received += d.length;
          if (received >= TOTAL) resolve();
        });
      });
      return 0;
    },
    attach: async () => assert.fail('attach backend reached'),
    portForward: async () => assert.fail('port-forward backend reached'),
  };
  const server = new StreamingServer({ address: '127.0.0.1', port: 0, backend });
  await server.listen();
  t.after(() => server.close());
  const url = server.issue({ kind: 'exec', containerId: 'c', cmd: ['cat'], tty: false, stdin: true, stdout: true, stderr: false }).replace(/^http/, 'ws');
  const ws = new WebSocket(url, ['v4.channel.k8s.io']);
  t.after(() => ws.terminate());
  await flood(ws, 0);

  await until('the backend has stdin', () => stdin);
  // Either skiffd stops reading the client (pause), or it buffers past the bound (the failure).
  await until('skiffd pauses the WebSocket or buffers past the bound', () => pauses() > 0 || buffered(stdin!) > BOUND, 60_000);
  assert.ok(buffered(stdin!) <= BOUND, `skiffd holds ${buffered(stdin!)} bytes of unread stdin`);
  assert.ok(ws.bufferedAmount > 0, 'the client still holds what skiffd did not read');

  read();
  await until('all stdin read', () => received >= TOTAL, 60_000);
  assert.equal(received, TOTAL);
});

test('WebSocket port-forward: data the port does not read stops skiffd reading the client; it all arrives once read', { timeout: 120_000 }, async (t) => {
  const pauses = countPauses(t);
  let data: Duplex | undefined;
  let received = 0;
  let read = () => {};
  const readAll = new Promise<void>((resolve) => (read = resolve));
  const backend: StreamingBackend = {
    exec: async () => assert.fail('exec backend reached'),
    attach: async () => assert.fail('attach backend reached'),
    portForward: async (_pod, _port, stream) => {
      data = stream;
      await readAll;
      await new Promise<void>((resolve) => {
        stream.on('data', (d: Buffer) => {
          received += d.length;
          if (received >= TOTAL) resolve();
        });
      });
    },
  };
  const server = new StreamingServer({ address: '127.0.0.1', port: 0, backend });
  await server.listen();
  t.after(() => server.close());
  const url = `${server.issue({ kind: 'portforward', podSandboxId: 'p', ports: [] }).replace(/^http/, 'ws')}?port=80`;
  const ws = new WebSocket(url, ['v4.channel.k8s.io']);
  t.after(() => ws.terminate());
  await flood(ws, 0);

  await until('the backend has the data stream', () => data);
  await until('skiffd pauses the WebSocket or buffers past the bound', () => pauses() > 0 || buffered(data!) > BOUND, 60_000);
  assert.ok(buffered(data!) <= BOUND, `skiffd holds ${buffered(data!)} bytes of unread port data`);

  read();
  await until('all data read', () => received >= TOTAL, 60_000);
  assert.equal(received, TOTAL);
});
