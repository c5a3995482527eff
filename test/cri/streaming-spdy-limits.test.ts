// SPDY header blocks are zlib streams: a small block can inflate a thousandfold. The framer refuses
// a block too large to be a header block before inflating it, and stops inflating one whose output
// passes the limit; over a session either is a protocol error (GOAWAY), never a crash.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Duplex } from 'node:stream';
import zlib from 'node:zlib';
import {
  FrameReader,
  FrameType,
  HeaderCodec,
  MAX_COMPRESSED_HEADER_BLOCK,
  MAX_HEADER_BLOCK,
  SpdyProtocolError,
} from '../../node/skiffd/streaming/spdy/framer.ts';
import { SPDY3_DICTIONARY } from '../../node/skiffd/streaming/spdy/dictionary.ts';
import { SpdySession } from '../../node/skiffd/streaming/spdy/session.ts';

/** A header block as a client's compression context would start it: deflated with the SPDY dictionary, sync-flushed. */
function headerBlock(raw: Buffer): Buffer {
  return zlib.deflateSync(raw, { dictionary: SPDY3_DICTIONARY, finishFlush: zlib.constants.Z_SYNC_FLUSH, level: 9 });
}

/** 10 MB of zeros: a valid block (count 0, then padding) that deflates to ~10 KB. */
const BOMB = headerBlock(Buffer.alloc(10 * 1024 * 1024));

test('a header block that inflates past the limit is a protocol error, and little of it is inflated', async () => {
  assert.ok(BOMB.length < MAX_COMPRESSED_HEADER_BLOCK, `the bomb is small when compressed (${BOMB.length} bytes)`);
  const codec = new HeaderCodec();
  // Count what the inflater hands over: the limit must stop zlib itself, not only the result.
  const inflater = (codec as unknown as { inflater: { z: zlib.Inflate } }).inflater.z;
  let inflated = 0;
  inflater.on('data', (chunk: Buffer) => (inflated += chunk.length));
  await assert.rejects(codec.decode(BOMB), (err: Error) => err instanceof SpdyProtocolError && /inflates to more than/.test(err.message));
  // Whatever zlib still had in flight is counted once it settles.
  await new Promise((r) => setImmediate(r));
  assert.ok(inflated <= MAX_HEADER_BLOCK + 64 * 1024, `inflated ${inflated} bytes of a 10 MB bomb`);
  // The context is dead: later blocks fail too (their compression state is gone).
  await assert.rejects(codec.decode(headerBlock(Buffer.from([0, 0, 0, 0]))), SpdyProtocolError);
  codec.close();
});

test('a compressed header block over the limit is refused before it is inflated', async () => {
  const codec = new HeaderCodec();
  const inflater = (codec as unknown as { inflater: { z: zlib.Inflate } }).inflater.z;
  let inflated = 0;
  inflater.on('data', (chunk: Buffer) => (inflated += chunk.length));
  const big = Buffer.alloc(MAX_COMPRESSED_HEADER_BLOCK + 1);
  await assert.rejects(codec.decode(big), (err: Error) => err instanceof SpdyProtocolError && /compressed bytes exceeds/.test(err.message));
  assert.equal(inflated, 0);
  codec.close();
});

test('an ordinary header block still decodes', async () => {
  const client = new HeaderCodec();
  const server = new HeaderCodec();
  const block = await client.encode({ streamtype: ['stdout'], port: ['80'] });
  assert.deepEqual(await server.decode(block), { streamtype: ['stdout'], port: ['80'] });
  client.close();
  server.close();
});

test('a SYN_STREAM whose headers are a bomb ends the session with GOAWAY (protocol error), opening no stream', async () => {
  const fromServer: Buffer[] = [];
  let closedByServer = false;
  const socket = new Duplex({
    read() {},
    write(chunk: Buffer, _enc, cb) {
      fromServer.push(chunk);
      cb();
    },
    final(cb) {
      closedByServer = true;
      cb();
    },
  });
  const session = new SpdySession(socket);
  let streams = 0;
  // Either outcome settles it: the session closing, or (the failure) a stream opening.
  const closed = new Promise<void>((resolve) => {
    session.once('close', () => resolve());
    session.on('stream', () => {
      streams++;
      resolve();
    });
  });

  const body = Buffer.concat([Buffer.from([0, 0, 0, 1, 0, 0, 0, 0, 0, 0]), BOMB]);
  const head = Buffer.alloc(8);
  head.writeUInt32BE((0x80000000 | (3 << 16) | FrameType.SYN_STREAM) >>> 0, 0);
  head.writeUInt32BE(body.length, 4);
  socket.push(Buffer.concat([head, body]));
  await closed;

  assert.equal(streams, 0);
  const frames = new FrameReader().push(Buffer.concat(fromServer));
  const goAway = frames.find((f) => f.kind === 'control' && f.type === FrameType.GOAWAY);
  assert.ok(goAway && goAway.kind === 'control', 'the server sent GOAWAY');
  assert.equal(goAway.body.readUInt32BE(4), 1, 'GOAWAY status is PROTOCOL_ERROR');
  assert.ok(closedByServer || socket.destroyed);
});
