// The Node server's WebSocket writes: a socket's first frame of an event-loop turn leaves at once,
// later frames of that turn go out together when it ends, and every frame arrives intact, as text,
// whatever its length.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { test } from 'node:test';
import { WebSocket, WebSocketServer } from 'ws';
import { BatchingWebSocket } from '../../node/graphql/batching-websocket.ts';

function corked(ws: WebSocket): number {
  return (ws as unknown as { _socket: Duplex })._socket.writableCorked;
}

test('a first frame per turn is written at once, the rest of the turn together, all as intact text', { timeout: 20_000 }, async (t) => {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', WebSocket: BatchingWebSocket });
  await once(wss, 'listening');
  const url = `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`;
  const serverSockets: WebSocket[] = [];
  wss.on('connection', (ws) => serverSockets.push(ws));
  const clients = [new WebSocket(url), new WebSocket(url)];
  t.after(async () => {
    for (const c of clients) c.terminate();
    for (const ws of serverSockets) ws.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  });
  await Promise.all(clients.map((c) => once(c, 'open')));
  const deadline = Date.now() + 10_000;
  while (serverSockets.length < 2) {
    if (Date.now() > deadline) throw new Error('the server did not see both connections');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const received = clients.map(() => [] as Array<{ text: string; binary: boolean }>);
  clients.forEach((c, i) => {
    c.on('message', (data: Buffer, binary: boolean) => received[i].push({ text: data.toString(), binary }));
  });

  const [a, b] = serverSockets;
  const event = (n: number) => `{"id":"1","type":"next","payload":{"n":${n},"text":"ünïcødé ✓"}}`;
  // One fan-out: the same string to both sockets, then a second event to both in the same turn.
  a.send(event(1));
  assert.equal(corked(a), 0, 'the first frame of the turn is not held back');
  b.send(event(1));
  assert.equal(corked(b), 0);
  a.send(event(2));
  b.send(event(2));
  assert.equal(corked(a), 1, 'a second frame in the same turn corks the socket');
  assert.equal(corked(b), 1);
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(corked(a), 0, 'the end of the turn uncorks it');
  assert.equal(corked(b), 0);
  // The next turn starts over: its first frame is written at once again.
  a.send(event(3));
  assert.equal(corked(a), 0);

  // Every length encoding of a frame header: 7 bits, 16 bits, 64 bits.
  const sizes = [125, 126, 65_535, 65_536, 200_000].map((n) => 'é'.repeat(n >> 1) + 'x'.repeat(n & 1));
  for (const text of sizes) b.send(text);

  const until = Date.now() + 10_000;
  while (received[0].length < 3 || received[1].length < 2 + sizes.length) {
    if (Date.now() > until) throw new Error(`frames missing: ${JSON.stringify(received)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.deepEqual(
    received[0],
    [1, 2, 3].map((n) => ({ text: event(n), binary: false })),
  );
  assert.deepEqual(
    received[1].slice(0, 2),
    [1, 2].map((n) => ({ text: event(n), binary: false })),
  );
  assert.deepEqual(
    received[1].slice(2),
    sizes.map((text) => ({ text, binary: false })),
  );
});
