// NRI's connection multiplexer: one unix connection between the runtime and a plugin carries two
// logical byte streams, each frame an 8-byte header (connection id, payload length, both big-endian
// u32) and the payload. Connection 1 carries the plugin's ttrpc service (the runtime calls it),
// connection 2 the runtime's (the plugin calls it). A frame that cannot be one ends the whole
// connection: after garbage nothing on the stream can be trusted.
import type { Socket } from 'node:net';
import { ByteQueue } from './byte-queue.ts';

/** Logical connection of the Plugin service (the runtime is its client). */
export const PLUGIN_SERVICE_CONN = 1;
/** Logical connection of the Runtime service (the runtime serves it). */
export const RUNTIME_SERVICE_CONN = 2;

const HEADER_LENGTH = 8;
/** A ttrpc message (10-byte header, at most 4 MiB) fits in one frame; a larger frame is garbage. */
export const MAX_FRAME_PAYLOAD = 10 + 4 * 1024 * 1024;
/**
 * What we send per frame. The reference multiplexer hands one whole frame to each read, and fails the
 * connection (ENOMEM) when the reader's buffer is smaller; Go's ttrpc reads through a 4096-byte
 * buffer, so no frame may be larger than that.
 */
const SEND_FRAME_PAYLOAD = 4096;
/**
 * What may wait, unsent, for a peer to read: a few of the largest messages. Beyond that the peer is
 * not reading (a plugin that sends requests and never reads the answers would otherwise have us hold
 * every answer in memory), and the connection ends.
 */
export const MAX_UNSENT = 16 * 1024 * 1024;

export class MuxProtocolError extends Error {
  override name = 'MuxProtocolError';
}

export interface LogicalConn {
  write(data: Uint8Array): void;
}

type Receiver = (data: Buffer) => void;

export class Mux {
  private readonly receivers = new Map<number, Receiver>();
  private readonly pending = new ByteQueue();
  private closed = false;
  private readonly closeListeners: ((err: Error | undefined) => void)[] = [];

  constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (err) => this.close(err));
    socket.on('close', () => this.close(undefined));
  }

  /** Data arriving for `id` goes to `receive`; writes go out framed with `id`. */
  open(id: number, receive: Receiver): LogicalConn {
    this.receivers.set(id, receive);
    return { write: (data) => this.write(id, data) };
  }

  onClose(listener: (err: Error | undefined) => void): void {
    if (this.closed) listener(undefined);
    else this.closeListeners.push(listener);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  close(err?: Error): void {
    if (this.closed) return;
    this.closed = true;
    this.socket.destroy();
    for (const l of this.closeListeners.splice(0)) l(err);
  }

  private write(id: number, data: Uint8Array): void {
    if (this.closed) throw new MuxProtocolError('connection closed');
    let offset = 0;
    do {
      const part = data.subarray(offset, offset + SEND_FRAME_PAYLOAD);
      const header = Buffer.allocUnsafe(HEADER_LENGTH);
      header.writeUInt32BE(id, 0);
      header.writeUInt32BE(part.length, 4);
      this.socket.write(Buffer.concat([header, part]));
      offset += part.length;
    } while (offset < data.length);
    const unsent = this.socket.writableLength;
    if (unsent > MAX_UNSENT) this.close(new MuxProtocolError(`the peer does not read: ${unsent} bytes wait to be sent (at most ${MAX_UNSENT})`));
  }

  private onData(chunk: Buffer): void {
    if (this.closed) return;
    this.pending.push(chunk);
    while (this.pending.length >= HEADER_LENGTH) {
      const head = this.pending.peek(HEADER_LENGTH);
      const id = head.readUInt32BE(0);
      const length = head.readUInt32BE(4);
      if (length > MAX_FRAME_PAYLOAD) {
        this.close(new MuxProtocolError(`frame of ${length} bytes on connection ${id} (at most ${MAX_FRAME_PAYLOAD})`));
        return;
      }
      if (this.pending.length < HEADER_LENGTH + length) return;
      const frame = this.pending.take(HEADER_LENGTH + length).subarray(HEADER_LENGTH);
      // Frames for a connection nobody opened are dropped, as the reference multiplexer does.
      this.receivers.get(id)?.(frame);
      if (this.closed) return;
    }
  }
}
