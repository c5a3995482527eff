// One streamed response body: text frames in, UTF-8 bytes out through a web ReadableStream, which
// every runtime (Node through Hono, Deno, workerd, Bun, Vercel's edge) writes as the client reads.
// The channel owns what a stream needs beyond that: a bound on bytes queued for a client that does
// not read, a bound on how long bytes may wait untaken, keep-alive frames while nothing else is sent,
// and one `onClose` however it ends.
//
// A server adapter may take a stream over instead (`divertStream`): then frames go straight into its
// sink (the Node server writes them to the socket), with no web stream and no promise per frame in
// between. It has until the end of the turn that made the response to do so; the frames written
// before then go to whichever consumer it turns out to be.

export interface StreamChannelOptions {
  /** Written first, so the client sees headers and a byte at once; '' for nothing. */
  open: string;
  /** Written every `keepAliveMs` while the stream is open; 0 disables. */
  keepAlive: string;
  keepAliveMs: number;
  /** Bytes queued unread past which the stream is cut. */
  maxBufferedBytes: number;
  /**
   * How long bytes may wait without the client taking any before the stream is cut; 0 never cuts.
   * Checked every `keepAliveMs` (or every `sendTimeoutMs` without keep-alives), so a stall is cut at
   * most one interval late. It also ends a stream whose runtime stopped reading it for a client that
   * left without the body being cancelled.
   */
  sendTimeoutMs: number;
  /**
   * Called once when the stream ends: `ended` (end() was called), `cancelled` (the client went away),
   * `overflow` (the client read too slowly and was cut) or `stalled` (it took nothing for
   * `sendTimeoutMs` and was cut).
   */
  onClose(reason: CloseReason): void;
}

export type CloseReason = 'ended' | 'cancelled' | 'overflow' | 'stalled';

/** Where a diverted stream writes: a server adapter's connection. */
export interface StreamSink {
  write(bytes: Uint8Array): void;
  /** Bytes written but not yet taken by the client's connection. */
  bufferedBytes(): number;
  /** Ends the response normally. */
  end(): void;
  /** Cuts the connection (a client that did not keep up). */
  destroy(): void;
}

const encoder = new TextEncoder();
// Fan-out writes one frame string to many channels in a row: encode it once.
let lastText = '';
let lastBytes = new Uint8Array(0);

function encode(text: string): Uint8Array {
  if (text !== lastText) {
    lastBytes = encoder.encode(text);
    lastText = text;
  }
  return lastBytes;
}

const channelOfBody = new WeakMap<ReadableStream<Uint8Array>, StreamChannel>();
const channels = new WeakMap<Response, StreamChannel>();

/** Marks a response made with a channel's body as that channel's, so a server adapter can divert it. */
export function registerStreamResponse(response: Response, body: ReadableStream<Uint8Array>): void {
  const channel = channelOfBody.get(body);
  if (channel !== undefined) channels.set(response, channel);
}

/** Whether `response` is a stream a server adapter may still take over. */
export function canDivertStream(response: Response): boolean {
  return channels.get(response)?.divertible === true;
}

/**
 * Takes a streamed response over: its frames go to `sink` from now on (those written so far first),
 * and its body is never read. False when `response` is no stream, or it is too late (its body has
 * been handed out already). `onGone` is for the adapter to call when the client goes away.
 */
export function divertStream(response: Response, sink: StreamSink): { onGone(): void } | null {
  const channel = channels.get(response);
  if (channel === undefined || !channel.divert(sink)) return null;
  return { onGone: () => channel.cancel() };
}

type Consumer = 'undecided' | 'body' | 'sink';

export class StreamChannel {
  readonly body: ReadableStream<Uint8Array>;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #consumer: Consumer = 'undecided';
  /** Frames written before the consumer is known, and whether the stream ended meanwhile. */
  #early: Uint8Array[] = [];
  #earlyBytes = 0;
  #endedEarly = false;
  #sink: StreamSink | undefined;
  #open = true;
  /** Bytes handed to the body or the sink, of which those not waiting have been taken by the client. */
  #written = 0;
  #takenAtTick = 0;
  /** When a tick first found bytes waiting and none taken since the tick before. */
  #stalledSince: number | undefined;
  #sentSinceTick = false;
  #lastWasKeepAlive = false;
  #timer: ReturnType<typeof setInterval> | undefined;
  readonly #options: StreamChannelOptions;

  constructor(options: StreamChannelOptions) {
    this.#options = options;
    this.body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.#controller = controller;
        },
        cancel: () => this.#close('cancelled'),
      },
      // desiredSize then counts bytes: how much room is left before the bound. (A plain strategy object:
      // Vercel's edge runtime has no ByteLengthQueuingStrategy.)
      { highWaterMark: options.maxBufferedBytes, size: (chunk: Uint8Array) => chunk.byteLength },
    );
    channelOfBody.set(this.body, this);
    if (options.open !== '') this.write(options.open);
    // No adapter took it over within this turn: the body is what the client reads.
    setTimeout(() => this.#useBody(), 0);
    const period = options.keepAliveMs > 0 && options.keepAlive !== '' ? options.keepAliveMs : options.sendTimeoutMs;
    if (period > 0) {
      this.#timer = setInterval(() => this.#tick(), period);
      // Deno and Node would otherwise stay up for an idle stream's timer alone.
      (this.#timer as { unref?: () => void }).unref?.();
    }
  }

  get isOpen(): boolean {
    return this.#open;
  }

  get divertible(): boolean {
    return this.#consumer === 'undecided';
  }

  /** Queues `text`; a client that leaves more than the bound unread is cut instead. */
  write(text: string): void {
    if (!this.#open) return;
    const bytes = encode(text);
    const max = this.#options.maxBufferedBytes;
    switch (this.#consumer) {
      case 'sink': {
        const waiting = this.#sink!.bufferedBytes();
        if (waiting > 0 && waiting + bytes.byteLength > max) {
          this.#cut('overflow');
          return;
        }
        this.#sink!.write(bytes);
        this.#written += bytes.byteLength;
        break;
      }
      case 'body': {
        const room = this.#controller.desiredSize ?? 0;
        // Over the bound with something already waiting: the client is not keeping up.
        if (bytes.byteLength > room && room < max) {
          this.#cut('overflow');
          return;
        }
        this.#controller.enqueue(bytes);
        this.#written += bytes.byteLength;
        break;
      }
      default:
        if (this.#earlyBytes > 0 && this.#earlyBytes + bytes.byteLength > max) {
          this.#cut('overflow');
          return;
        }
        this.#early.push(bytes);
        this.#earlyBytes += bytes.byteLength;
    }
    this.#sentSinceTick = true;
    this.#lastWasKeepAlive = false;
  }

  /** Writes `last` (or `afterKeepAlive` when a keep-alive was the last write) and closes the body normally. */
  end(last: string, afterKeepAlive = last): void {
    if (!this.#open) return;
    this.write(this.#lastWasKeepAlive ? afterKeepAlive : last);
    if (!this.#open) return;
    this.#close('ended');
    this.#finish();
  }

  /** Ends the stream at once, without a last frame: a client that is gone, or a server shutting down. */
  cancel(): void {
    if (!this.#open) return;
    this.#close('cancelled');
    this.#finish();
  }

  /** Sends every frame to `sink` from now on; false once the body has been chosen. */
  divert(sink: StreamSink): boolean {
    if (this.#consumer !== 'undecided') return false;
    this.#consumer = 'sink';
    this.#sink = sink;
    for (const bytes of this.#early) sink.write(bytes);
    this.#written += this.#earlyBytes;
    this.#early = [];
    if (this.#endedEarly) sink.end();
    return true;
  }

  #useBody(): void {
    if (this.#consumer !== 'undecided') return;
    this.#consumer = 'body';
    try {
      for (const bytes of this.#early) this.#controller.enqueue(bytes);
      this.#written += this.#earlyBytes;
      if (this.#endedEarly) this.#controller.close();
    } catch {
      // the body was cancelled meanwhile
    }
    this.#early = [];
  }

  /** Ends whichever consumer there is, normally. */
  #finish(): void {
    if (this.#consumer === 'sink') this.#sink!.end();
    else if (this.#consumer === 'body') {
      try {
        this.#controller.close();
      } catch {
        // already closed by the runtime
      }
    } else this.#endedEarly = true;
  }

  /** Cuts a client that does not keep up: its connection is dropped rather than ended normally. */
  #cut(reason: 'overflow' | 'stalled'): void {
    this.#close(reason);
    if (this.#consumer === 'sink') this.#sink!.destroy();
    else {
      this.#consumer = 'body';
      this.#early = [];
      const why = reason === 'overflow' ? 'the client did not read fast enough' : `the client took nothing for ${formatMs(this.#options.sendTimeoutMs)}`;
      this.#controller.error(new Error(`stream closed: ${why}`));
    }
  }

  #tick(): void {
    if (this.#stalled()) {
      this.#cut('stalled');
      return;
    }
    if (this.#options.keepAliveMs === 0 || this.#options.keepAlive === '') return;
    if (!this.#sentSinceTick) {
      this.write(this.#options.keepAlive);
      this.#lastWasKeepAlive = true;
    }
    this.#sentSinceTick = false;
  }

  /** Whether bytes have waited for `sendTimeoutMs` with not one of them taken by the client. */
  #stalled(): boolean {
    const timeout = this.#options.sendTimeoutMs;
    if (timeout === 0 || this.#consumer === 'undecided') return false;
    const waiting = this.#consumer === 'sink' ? this.#sink!.bufferedBytes() : this.#options.maxBufferedBytes - (this.#controller.desiredSize ?? 0);
    const taken = this.#written - waiting;
    if (waiting <= 0 || taken !== this.#takenAtTick) {
      this.#takenAtTick = taken;
      this.#stalledSince = undefined;
      return false;
    }
    const now = Date.now();
    this.#stalledSince ??= now;
    return now - this.#stalledSince >= timeout;
  }

  #close(reason: CloseReason): void {
    if (!this.#open) return;
    this.#open = false;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#options.onClose(reason);
  }
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
