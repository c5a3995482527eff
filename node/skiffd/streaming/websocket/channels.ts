// The Kubernetes WebSocket channel framing: every message starts with a channel number (one byte
// in the binary protocols; one ASCII digit followed by base64 data in the `base64.` protocols).
// v5 adds a control message on channel 255 whose payload names a channel the sender closed.
import { Writable } from 'node:stream';
import type { WebSocket } from 'ws';

export const CLOSE_CHANNEL = 255;

export class ChannelSocket {
  private readonly handlers = new Map<number, (data: Buffer) => void>();
  private readonly closeHandlers = new Map<number, () => void>();

  constructor(
    readonly ws: WebSocket,
    readonly base64: boolean,
  ) {
    ws.on('message', (raw: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => {
      const msg = Buffer.isBuffer(raw) ? raw : Array.isArray(raw) ? Buffer.concat(raw) : Buffer.from(raw);
      if (msg.length === 0) return;
      let channel: number;
      let data: Buffer;
      if (this.base64 && !isBinary) {
        channel = msg[0] - 0x30;
        data = Buffer.from(msg.subarray(1).toString('latin1'), 'base64');
      } else {
        channel = msg[0];
        data = msg.subarray(1);
      }
      if (channel === CLOSE_CHANNEL) {
        if (data.length > 0) this.closeHandlers.get(data[0])?.();
        return;
      }
      this.handlers.get(channel)?.(data);
    });
  }

  onData(channel: number, handler: (data: Buffer) => void): void {
    this.handlers.set(channel, handler);
  }

  /** v5: the client closed its side of `channel` (stdin EOF). */
  onClose(channel: number, handler: () => void): void {
    this.closeHandlers.set(channel, handler);
  }

  get open(): boolean {
    return this.ws.readyState === this.ws.OPEN;
  }

  send(channel: number, data: Buffer | string, cb?: (err?: Error) => void): void {
    if (!this.open) {
      cb?.(new Error('WebSocket is closed'));
      return;
    }
    const body = typeof data === 'string' ? Buffer.from(data) : data;
    if (this.base64) this.ws.send(String.fromCharCode(0x30 + channel) + body.toString('base64'), { binary: false }, cb);
    else this.ws.send(Buffer.concat([Buffer.from([channel]), body]), { binary: true }, cb);
  }

  /** A Writable whose chunks become messages on `channel`. */
  writer(channel: number): Writable {
    return new Writable({
      write: (chunk: Buffer, _enc, cb) => this.send(channel, chunk, (err) => cb(this.open ? err : undefined)),
    });
  }

  close(code = 1000, reason = ''): void {
    if (this.ws.readyState === this.ws.OPEN || this.ws.readyState === this.ws.CONNECTING) this.ws.close(code, reason);
    setTimeout(() => this.ws.terminate(), 5_000).unref();
  }
}
