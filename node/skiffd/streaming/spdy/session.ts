// A server-side SPDY/3.1 session over an upgraded socket, as the kubelet runs one: the client
// opens every stream (SYN_STREAM with Kubernetes headers such as `streamType`), the server replies
// at once and then exchanges DATA. Each stream is a Node Duplex. Flow control is not enforced in
// either direction (client-go's SPDY library neither sends nor honours WINDOW_UPDATE); TCP's own
// back-pressure applies instead.
import { EventEmitter } from 'node:events';
import { Duplex } from 'node:stream';
import {
  FrameReader,
  FrameType,
  FLAG_FIN,
  HeaderCodec,
  RstStatus,
  SpdyProtocolError,
  dataFrame,
  goAwayFrame,
  parseStreamIdAnd32,
  parseSynStream,
  pingFrame,
  rstStreamFrame,
  synReplyFrame,
  type Frame,
  type Headers,
} from './framer.ts';

/** client-go writes at most 32 KiB per DATA frame; we do the same. */
const MAX_DATA = 32 * 1024;

export class SpdyStream extends Duplex {
  private remoteDone = false;
  private localDone = false;

  constructor(
    private readonly session: SpdySession,
    readonly id: number,
    readonly headers: Headers,
  ) {
    super({ allowHalfOpen: true });
  }

  /** First value of a request header (names are lower-case). */
  header(name: string): string | undefined {
    return this.headers[name.toLowerCase()]?.[0];
  }

  override _read(): void {
    this.session.resumeInput();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (this.localDone) {
      cb(new Error(`SPDY stream ${this.id} is closed`));
      return;
    }
    for (let off = 0; off < chunk.length; off += MAX_DATA) {
      const last = off + MAX_DATA >= chunk.length;
      this.session.send(dataFrame(this.id, chunk.subarray(off, off + MAX_DATA), false), last ? cb : undefined);
    }
    if (chunk.length === 0) cb();
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.finishLocal();
    cb();
  }

  override _destroy(err: Error | null, cb: (err: Error | null) => void): void {
    if (!this.localDone || !this.remoteDone) {
      this.localDone = this.remoteDone = true;
      this.session.send(rstStreamFrame(this.id, RstStatus.CANCEL));
      this.session.forget(this.id);
    }
    cb(err);
  }

  /** Sends FIN: our half of the stream is done. */
  private finishLocal(): void {
    if (this.localDone) return;
    this.localDone = true;
    this.session.send(dataFrame(this.id, Buffer.alloc(0), true));
    if (this.remoteDone) this.session.forget(this.id);
  }

  /** @internal frames from the peer */
  receive(data: Buffer, fin: boolean): void {
    if (this.remoteDone || this.destroyed) return;
    if (data.length > 0 && !this.push(data)) this.session.pauseInput();
    if (fin) this.remoteFinished();
  }

  /** @internal */
  remoteFinished(): void {
    if (this.remoteDone) return;
    this.remoteDone = true;
    this.push(null);
    if (this.localDone) this.session.forget(this.id);
  }

  /** @internal the peer reset the stream or the connection went away */
  reset(reason: string): void {
    this.localDone = this.remoteDone = true;
    this.resetReason = reason;
    this.destroy();
  }

  /** Why the stream was torn down, when it was (for diagnostics). */
  resetReason: string | undefined;
}

export interface SpdySessionEvents {
  stream: [SpdyStream];
  close: [];
}

export class SpdySession extends EventEmitter<SpdySessionEvents> {
  private readonly reader = new FrameReader();
  private readonly codec = new HeaderCodec();
  private readonly streams = new Map<number, SpdyStream>();
  /** Frames are handled one after another: header blocks decompress asynchronously, in order. */
  private queue: Promise<void> = Promise.resolve();
  private lastStreamId = 0;
  private closed = false;
  private goneAway = false;

  /** `socket`: the upgraded TCP connection, or any byte stream (SPDY tunnelled in WebSocket messages). */
  constructor(private readonly socket: Duplex & { setNoDelay?(noDelay: boolean): unknown }) {
    super();
    socket.setNoDelay?.(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', () => this.teardown('connection error'));
    socket.on('close', () => this.teardown('connection closed'));
    socket.on('end', () => this.teardown('connection closed by the client'));
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** @internal */
  send(frame: Buffer, cb?: (err?: Error | null) => void): void {
    if (this.closed || this.socket.destroyed) {
      cb?.(new Error('SPDY connection is closed'));
      return;
    }
    this.socket.write(frame, cb);
  }

  /** @internal */
  forget(id: number): void {
    this.streams.delete(id);
  }

  /** @internal a stream's reader is full: stop reading the socket until it drains */
  pauseInput(): void {
    this.socket.pause();
  }

  /** @internal */
  resumeInput(): void {
    if (!this.closed) this.socket.resume();
  }

  /** Graceful end: GOAWAY, then the socket closes once written. */
  close(): void {
    if (this.closed) return;
    if (!this.goneAway) {
      this.goneAway = true;
      this.send(goAwayFrame(this.lastStreamId));
    }
    this.socket.end();
    // A peer that never closes its side must not pin the socket.
    setTimeout(() => this.socket.destroy(), 5_000).unref();
  }

  private onData(chunk: Buffer): void {
    if (this.closed) return;
    let frames: Frame[];
    try {
      frames = this.reader.push(chunk);
    } catch (err) {
      this.fail(err);
      return;
    }
    for (const frame of frames) {
      this.queue = this.queue.then(async () => {
        if (this.closed) return;
        try {
          if (frame.kind === 'data') this.onDataFrame(frame.streamId, frame.data, (frame.flags & FLAG_FIN) !== 0);
          else await this.onControl(frame.type, frame.flags, frame.body);
        } catch (err) {
          this.fail(err);
        }
      });
    }
  }

  /** A framing error leaves the connection unusable (the header compression state is lost). */
  private fail(err: unknown): void {
    if (!this.goneAway) {
      this.goneAway = true;
      this.send(goAwayFrame(this.lastStreamId, 1));
    }
    this.socket.end();
    this.teardown(`SPDY protocol error: ${(err as Error).message}`);
  }

  private onDataFrame(id: number, data: Buffer, fin: boolean): void {
    const stream = this.streams.get(id);
    if (!stream) {
      if (id !== 0) this.send(rstStreamFrame(id, RstStatus.INVALID_STREAM));
      return;
    }
    stream.receive(data, fin);
  }

  private async onControl(type: number, flags: number, body: Buffer): Promise<void> {
    switch (type) {
      case FrameType.SYN_STREAM: {
        const syn = parseSynStream(flags, body);
        const headers = await this.codec.decode(syn.headerBlock);
        if (syn.streamId % 2 === 0 || syn.streamId <= this.lastStreamId) {
          this.send(rstStreamFrame(syn.streamId, RstStatus.PROTOCOL_ERROR));
          return;
        }
        this.lastStreamId = syn.streamId;
        if (this.goneAway) {
          this.send(rstStreamFrame(syn.streamId, RstStatus.REFUSED_STREAM));
          return;
        }
        const stream = new SpdyStream(this, syn.streamId, headers);
        this.streams.set(syn.streamId, stream);
        this.send(synReplyFrame(syn.streamId, await this.codec.encode({}), false));
        if (syn.fin) stream.remoteFinished();
        this.emit('stream', stream);
        return;
      }
      case FrameType.RST_STREAM: {
        const { streamId, value } = parseStreamIdAnd32(body, 'RST_STREAM');
        const stream = this.streams.get(streamId);
        this.streams.delete(streamId);
        stream?.reset(`stream reset by the client (status ${value})`);
        return;
      }
      case FrameType.PING: {
        if (body.length < 4) throw new SpdyProtocolError('PING frame too short');
        const id = body.readUInt32BE(0);
        // Odd ids are the client's own pings: echo them. Even ids would answer ours; we send none.
        if (id % 2 === 1) this.send(pingFrame(id));
        return;
      }
      case FrameType.GOAWAY:
        this.goneAway = true;
        return;
      case FrameType.HEADERS:
        // Header block must still be inflated to keep the compression context in step.
        if (body.length >= 4) await this.codec.decode(body.subarray(4));
        return;
      case FrameType.SYN_REPLY:
        if (body.length >= 4) await this.codec.decode(body.subarray(4));
        return;
      default:
        return; // SETTINGS, WINDOW_UPDATE and unknown types carry nothing we act on
    }
  }

  private teardown(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    for (const stream of this.streams.values()) stream.reset(reason);
    this.streams.clear();
    this.codec.close();
    this.socket.destroy();
    this.emit('close');
  }
}
