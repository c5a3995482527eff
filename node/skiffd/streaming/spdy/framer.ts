// SPDY/3.1 frame encoding and decoding: just what a Kubernetes streaming server needs (the peer is
// client-go's SPDY client). Control frames carry version 3; header blocks are zlib streams primed
// with the SPDY/3 dictionary, one compression context per direction for the whole connection, so
// header blocks must be (de)compressed strictly in frame order.
import zlib from 'node:zlib';
import { SPDY3_DICTIONARY } from './dictionary.ts';

export const FrameType = {
  SYN_STREAM: 1,
  SYN_REPLY: 2,
  RST_STREAM: 3,
  SETTINGS: 4,
  PING: 6,
  GOAWAY: 7,
  HEADERS: 8,
  WINDOW_UPDATE: 9,
} as const;

export const FLAG_FIN = 0x01;
export const FLAG_UNIDIRECTIONAL = 0x02;

/** RST_STREAM status codes (SPDY/3 §2.4.2). */
export const RstStatus = {
  PROTOCOL_ERROR: 1,
  INVALID_STREAM: 2,
  REFUSED_STREAM: 3,
  CANCEL: 5,
  INTERNAL_ERROR: 6,
  STREAM_IN_USE: 8,
  STREAM_ALREADY_CLOSED: 9,
} as const;

const VERSION = 3;
/** Largest frame we accept; client-go never comes close (its data frames are at most 32 KiB). */
const MAX_FRAME = 16 * 1024 * 1024;
/**
 * Header blocks are small (client-go's are a few hundred bytes). zlib inflates up to ~1000:1, so a
 * block is refused before inflating when its compressed size is over this, and inflating stops
 * once the output passes MAX_HEADER_BLOCK: a bomb is a protocol error, never an allocation.
 */
export const MAX_COMPRESSED_HEADER_BLOCK = 64 * 1024;
export const MAX_HEADER_BLOCK = 256 * 1024;

export type Headers = Record<string, string[]>;

export type Frame = { kind: 'data'; streamId: number; flags: number; data: Buffer } | { kind: 'control'; type: number; flags: number; body: Buffer };

export class SpdyProtocolError extends Error {
  override name = 'SpdyProtocolError';
}

/** Splits a byte stream into frames; feed it chunks, it returns the complete frames so far. */
export class FrameReader {
  private buffered: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Frame[] {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    const frames: Frame[] = [];
    while (this.buffered.length >= 8) {
      const length = this.buffered.readUIntBE(5, 3);
      if (length > MAX_FRAME) throw new SpdyProtocolError(`frame of ${length} bytes exceeds the ${MAX_FRAME}-byte limit`);
      if (this.buffered.length < 8 + length) break;
      const head = this.buffered.readUInt32BE(0);
      const flags = this.buffered[4];
      const body = this.buffered.subarray(8, 8 + length);
      this.buffered = this.buffered.subarray(8 + length);
      if (head & 0x80000000) {
        const version = (head >>> 16) & 0x7fff;
        if (version !== VERSION) throw new SpdyProtocolError(`unsupported SPDY version ${version} (this server speaks SPDY/3.1)`);
        frames.push({ kind: 'control', type: head & 0xffff, flags, body });
      } else {
        frames.push({ kind: 'data', streamId: head & 0x7fffffff, flags, data: body });
      }
    }
    return frames;
  }
}

/** Runs chunks through one zlib stream in order, each flushed (Z_SYNC_FLUSH) to a whole block. */
class SerialZlib {
  private chain: Promise<unknown> = Promise.resolve();
  private out: Buffer[] = [];
  private outLength = 0;
  private failure: Error | undefined;
  /** Rejects the chunk in flight: after an error zlib never calls the flush callback. */
  private abort: ((err: Error) => void) | undefined;

  /** `maxOutput`: the most one run may produce; past it the stream is dead (its state is lost). */
  constructor(
    private readonly z: zlib.Inflate | zlib.Deflate,
    private readonly maxOutput = Number.POSITIVE_INFINITY,
  ) {
    z.on('data', (chunk: Buffer) => {
      if (this.failure) return;
      this.outLength += chunk.length;
      if (this.outLength > this.maxOutput) {
        this.out = [];
        this.failure = new Error(`a header block inflates to more than ${this.maxOutput} bytes`);
        this.abort?.(this.failure);
        this.z.close(); // no further output is made
        return;
      }
      this.out.push(chunk);
    });
    z.on('error', (err: Error) => {
      this.failure = err;
      this.abort?.(err);
    });
  }

  run(input: Buffer): Promise<Buffer> {
    const next = this.chain.then(
      () =>
        new Promise<Buffer>((resolve, reject) => {
          if (this.failure) return reject(this.failure);
          this.out = [];
          this.outLength = 0;
          this.abort = reject;
          this.z.write(input);
          this.z.flush(zlib.constants.Z_SYNC_FLUSH, () => {
            this.abort = undefined;
            if (this.failure) reject(this.failure);
            else resolve(Buffer.concat(this.out));
          });
        }),
    );
    this.chain = next.catch(() => undefined);
    return next;
  }

  close(): void {
    this.z.close();
  }
}

/** Header-block (de)compression: one zlib context per direction, kept for the whole connection. */
export class HeaderCodec {
  private readonly inflater = new SerialZlib(zlib.createInflate({ dictionary: SPDY3_DICTIONARY }), MAX_HEADER_BLOCK);
  private readonly deflater = new SerialZlib(zlib.createDeflate({ dictionary: SPDY3_DICTIONARY }));

  async decode(block: Buffer): Promise<Headers> {
    const headers: Headers = {};
    if (block.length === 0) return headers;
    if (block.length > MAX_COMPRESSED_HEADER_BLOCK)
      throw new SpdyProtocolError(`a header block of ${block.length} compressed bytes exceeds the ${MAX_COMPRESSED_HEADER_BLOCK}-byte limit`);
    let raw: Buffer;
    try {
      raw = await this.inflater.run(block);
    } catch (err) {
      throw new SpdyProtocolError(`cannot decompress a header block: ${(err as Error).message}`);
    }
    if (raw.length === 0) return headers;
    let offset = 0;
    const need = (n: number) => {
      if (offset + n > raw.length) throw new SpdyProtocolError('truncated header block');
    };
    need(4);
    const count = raw.readUInt32BE(offset);
    offset += 4;
    for (let i = 0; i < count; i++) {
      need(4);
      const nameLen = raw.readUInt32BE(offset);
      offset += 4;
      need(nameLen);
      const name = raw.toString('utf8', offset, offset + nameLen).toLowerCase();
      offset += nameLen;
      need(4);
      const valueLen = raw.readUInt32BE(offset);
      offset += 4;
      need(valueLen);
      const values = raw.toString('utf8', offset, offset + valueLen).split('\0');
      offset += valueLen;
      headers[name] = [...(headers[name] ?? []), ...values];
    }
    return headers;
  }

  encode(headers: Headers): Promise<Buffer> {
    const entries = Object.entries(headers);
    const parts: Buffer[] = [];
    const u32 = (n: number) => {
      const b = Buffer.alloc(4);
      b.writeUInt32BE(n);
      return b;
    };
    parts.push(u32(entries.length));
    for (const [name, values] of entries) {
      const n = Buffer.from(name.toLowerCase());
      const v = Buffer.from(values.join('\0'));
      parts.push(u32(n.length), n, u32(v.length), v);
    }
    return this.deflater.run(Buffer.concat(parts));
  }

  close(): void {
    this.inflater.close();
    this.deflater.close();
  }
}

function control(type: number, flags: number, body: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE((0x80000000 | (VERSION << 16) | type) >>> 0, 0);
  head.writeUInt32BE(((flags << 24) | body.length) >>> 0, 4);
  return Buffer.concat([head, body]);
}

export function dataFrame(streamId: number, data: Buffer, fin: boolean): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(streamId & 0x7fffffff, 0);
  head.writeUInt32BE((((fin ? FLAG_FIN : 0) << 24) | data.length) >>> 0, 4);
  return data.length === 0 ? head : Buffer.concat([head, data]);
}

export function synReplyFrame(streamId: number, headerBlock: Buffer, fin: boolean): Buffer {
  const id = Buffer.alloc(4);
  id.writeUInt32BE(streamId & 0x7fffffff);
  return control(FrameType.SYN_REPLY, fin ? FLAG_FIN : 0, Buffer.concat([id, headerBlock]));
}

export function rstStreamFrame(streamId: number, status: number): Buffer {
  const body = Buffer.alloc(8);
  body.writeUInt32BE(streamId & 0x7fffffff, 0);
  body.writeUInt32BE(status, 4);
  return control(FrameType.RST_STREAM, 0, body);
}

export function pingFrame(id: number): Buffer {
  const body = Buffer.alloc(4);
  body.writeUInt32BE(id >>> 0);
  return control(FrameType.PING, 0, body);
}

export function goAwayFrame(lastGoodStreamId: number, status = 0): Buffer {
  const body = Buffer.alloc(8);
  body.writeUInt32BE(lastGoodStreamId & 0x7fffffff, 0);
  body.writeUInt32BE(status, 4);
  return control(FrameType.GOAWAY, 0, body);
}

/** Frames we receive, decoded from a control frame body. */
export interface SynStream {
  streamId: number;
  associatedId: number;
  fin: boolean;
  unidirectional: boolean;
  headerBlock: Buffer;
}

export function parseSynStream(flags: number, body: Buffer): SynStream {
  if (body.length < 10) throw new SpdyProtocolError('SYN_STREAM frame too short');
  return {
    streamId: body.readUInt32BE(0) & 0x7fffffff,
    associatedId: body.readUInt32BE(4) & 0x7fffffff,
    fin: (flags & FLAG_FIN) !== 0,
    unidirectional: (flags & FLAG_UNIDIRECTIONAL) !== 0,
    headerBlock: body.subarray(10),
  };
}

export function parseStreamIdAnd32(body: Buffer, what: string): { streamId: number; value: number } {
  if (body.length < 8) throw new SpdyProtocolError(`${what} frame too short`);
  return { streamId: body.readUInt32BE(0) & 0x7fffffff, value: body.readUInt32BE(4) };
}
