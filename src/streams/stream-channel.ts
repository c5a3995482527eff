// One streamed response body: text frames in, UTF-8 bytes out through a web ReadableStream, which
// every runtime (Node through Hono, Deno, workerd, Bun, Vercel's edge) writes as the client reads.
// The channel owns what a stream needs beyond that: a bound on bytes queued for a client that does
// not read, keep-alive frames while nothing else is sent, and one `onClose` however it ends.

export interface StreamChannelOptions {
  /** Written first, so the client sees headers and a byte at once; '' for nothing. */
  open: string;
  /** Written every `keepAliveMs` while the stream is open; 0 disables. */
  keepAlive: string;
  keepAliveMs: number;
  /** Bytes queued unread past which the stream is cut. */
  maxBufferedBytes: number;
  /**
   * Called once when the stream ends: `ended` (end() was called), `cancelled` (the client went away),
   * or `overflow` (the client read too slowly and was cut).
   */
  onClose(reason: 'ended' | 'cancelled' | 'overflow'): void;
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

export class StreamChannel {
  readonly body: ReadableStream<Uint8Array>;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #open = true;
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
    if (options.open !== '') this.write(options.open);
    if (options.keepAliveMs > 0 && options.keepAlive !== '') {
      this.#timer = setInterval(() => this.#tick(), options.keepAliveMs);
      // Deno and Node would otherwise stay up for an idle stream's timer alone.
      (this.#timer as { unref?: () => void }).unref?.();
    }
  }

  get isOpen(): boolean {
    return this.#open;
  }

  /** Queues `text`; a client that leaves more than the bound unread is cut instead. */
  write(text: string): void {
    if (!this.#open) return;
    const bytes = encode(text);
    const room = this.#controller.desiredSize ?? 0;
    if (bytes.byteLength > room && room < this.#options.maxBufferedBytes) {
      // Over the bound with something already waiting: the client is not keeping up.
      this.#close('overflow');
      this.#controller.error(new Error('stream closed: the client did not read fast enough'));
      return;
    }
    this.#sentSinceTick = true;
    this.#lastWasKeepAlive = false;
    this.#controller.enqueue(bytes);
  }

  /** Writes `last` (or `afterKeepAlive` when a keep-alive was the last write) and closes the body normally. */
  end(last: string, afterKeepAlive = last): void {
    if (!this.#open) return;
    this.write(this.#lastWasKeepAlive ? afterKeepAlive : last);
    if (!this.#open) return;
    this.#close('ended');
    this.#controller.close();
  }

  /** Ends the stream at once, for a client that is gone (its request was aborted). */
  cancel(): void {
    if (!this.#open) return;
    this.#close('cancelled');
    try {
      this.#controller.close();
    } catch {
      // already closed by the runtime
    }
  }

  #tick(): void {
    if (!this.#sentSinceTick) {
      this.write(this.#options.keepAlive);
      this.#lastWasKeepAlive = true;
    }
    this.#sentSinceTick = false;
  }

  #close(reason: 'ended' | 'cancelled' | 'overflow'): void {
    if (!this.#open) return;
    this.#open = false;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#options.onClose(reason);
  }
}
