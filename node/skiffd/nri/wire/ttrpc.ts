// ttrpc, containerd's small RPC protocol, over one logical stream: each message is a 10-byte header
// (payload length u32, stream id u32, type u8, flags u8; big-endian) and a protobuf payload. A unary
// call is a request (type 1) on a fresh odd stream id answered by a response (type 2) on the same id;
// the envelopes are ttrpc.Request and ttrpc.Response (proto/ttrpc/request.proto). One TtrpcEndpoint
// can both call and serve, as NRI needs only unary calls.
import { Request, Response } from '../../../../proto/gen/ttrpc/request.ts';
import { ByteQueue } from './byte-queue.ts';

const HEADER_LENGTH = 10;
export const MAX_MESSAGE_LENGTH = 4 * 1024 * 1024;
const TYPE_REQUEST = 1;
const TYPE_RESPONSE = 2;
/** A unary request carries no further data: the client side of its stream is closed. */
const FLAG_REMOTE_CLOSED = 0x1;

/** gRPC status codes ttrpc carries. */
export const Code = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
};

/** The peer answered with an error status: it understood the call and refused it. */
export class TtrpcStatusError extends Error {
  override name = 'TtrpcStatusError';
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** The peer broke the protocol, did not answer in time, or went away: the connection is no use any more. */
export class TtrpcConnectionError extends Error {
  override name = 'TtrpcConnectionError';
}

export type Handler = (service: string, method: string, payload: Uint8Array) => Promise<Uint8Array>;

interface Pending {
  resolve(payload: Uint8Array): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

export class TtrpcEndpoint {
  private readonly received = new ByteQueue();
  private nextStreamId = 1;
  private lastServedStreamId = 0;
  private readonly pending = new Map<number, Pending>();
  private failure: Error | undefined;

  /**
   * `send` writes bytes to the logical stream; `handler` serves requests (absent: every request is
   * refused as unimplemented); `onProtocolError` is told when the peer sent what cannot be ttrpc.
   */
  constructor(
    private readonly send: (bytes: Uint8Array) => void,
    private readonly onProtocolError: (err: Error) => void,
    private readonly handler?: Handler,
  ) {}

  /** Calls service/method with an encoded argument; resolves with the encoded result. */
  call(service: string, method: string, payload: Uint8Array, timeoutMs: number): Promise<Uint8Array> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextStreamId;
    this.nextStreamId += 2;
    const request = Request.encode({
      service,
      method,
      payload: Buffer.from(payload.buffer, payload.byteOffset, payload.length),
      timeoutNano: BigInt(timeoutMs) * 1_000_000n,
      metadata: [],
    }).finish();
    if (request.length > MAX_MESSAGE_LENGTH) {
      return Promise.reject(new TtrpcStatusError(Code.RESOURCE_EXHAUSTED, `message of ${request.length} bytes exceeds the maximum of ${MAX_MESSAGE_LENGTH}`));
    }
    return new Promise<Uint8Array>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new TtrpcConnectionError(`${method}: no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      try {
        this.writeMessage(id, TYPE_REQUEST, FLAG_REMOTE_CLOSED, request);
      } catch (err) {
        clearTimeout(timer);
        this.pending.delete(id);
        reject(new TtrpcConnectionError(`${method}: ${(err as Error).message}`));
      }
    });
  }

  /** Bytes from the logical stream. */
  receive(chunk: Buffer): void {
    if (this.failure) return;
    this.received.push(chunk);
    while (this.received.length >= HEADER_LENGTH) {
      const head = this.received.peek(HEADER_LENGTH);
      const length = head.readUInt32BE(0);
      const streamId = head.readUInt32BE(4);
      const type = head[8];
      if (length > MAX_MESSAGE_LENGTH) {
        this.protocolError(`message of ${length} bytes on stream ${streamId} (at most ${MAX_MESSAGE_LENGTH})`);
        return;
      }
      if (this.received.length < HEADER_LENGTH + length) return;
      const payload = this.received.take(HEADER_LENGTH + length).subarray(HEADER_LENGTH);
      if (type === TYPE_RESPONSE) this.onResponse(streamId, payload);
      else if (type === TYPE_REQUEST) this.onRequest(streamId, payload);
      else {
        this.protocolError(`message of unknown type ${type} on stream ${streamId}`);
        return;
      }
      if (this.failure) return;
    }
  }

  /** Fails every call in flight and any later one. */
  close(err: Error): void {
    if (this.failure) return;
    this.failure = err instanceof TtrpcConnectionError ? err : new TtrpcConnectionError(err.message);
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      this.pending.delete(id);
      p.reject(this.failure);
    }
  }

  private protocolError(message: string): void {
    const err = new TtrpcConnectionError(`protocol error: ${message}`);
    this.close(err);
    this.onProtocolError(err);
  }

  private onResponse(streamId: number, payload: Buffer): void {
    const p = this.pending.get(streamId);
    // A late answer to a call that timed out is dropped; one to a call never made is garbage.
    if (!p) {
      if (streamId % 2 === 1 && streamId < this.nextStreamId) return;
      this.protocolError(`response on stream ${streamId}, which no call opened`);
      return;
    }
    let response: Response;
    try {
      response = Response.decode(payload);
    } catch (err) {
      this.protocolError(`response on stream ${streamId} does not decode: ${(err as Error).message}`);
      return;
    }
    this.pending.delete(streamId);
    clearTimeout(p.timer);
    if (response.status && response.status.code !== Code.OK) p.reject(new TtrpcStatusError(response.status.code, response.status.message));
    else p.resolve(response.payload);
  }

  private onRequest(streamId: number, payload: Buffer): void {
    if (streamId % 2 !== 1 || streamId <= this.lastServedStreamId) {
      this.protocolError(`request on stream ${streamId} (client streams are odd and increasing)`);
      return;
    }
    this.lastServedStreamId = streamId;
    let request: Request;
    try {
      request = Request.decode(payload);
    } catch (err) {
      this.respond(streamId, Code.INVALID_ARGUMENT, `unmarshal request error: ${(err as Error).message}`);
      return;
    }
    const handler = this.handler;
    if (!handler) {
      this.respond(streamId, Code.UNIMPLEMENTED, `service ${request.service} is not served here`);
      return;
    }
    handler(request.service, request.method, request.payload).then(
      (result) => this.respond(streamId, Code.OK, '', result),
      (err: Error) => this.respond(streamId, err instanceof TtrpcStatusError ? err.code : Code.UNKNOWN, err.message),
    );
  }

  private respond(streamId: number, code: number, message: string, payload: Uint8Array = new Uint8Array(0)): void {
    if (this.failure) return;
    const body = Response.encode(
      code === Code.OK
        ? { status: undefined, payload: Buffer.from(payload.buffer, payload.byteOffset, payload.length) }
        : { status: { code, message }, payload: Buffer.alloc(0) },
    ).finish();
    try {
      this.writeMessage(streamId, TYPE_RESPONSE, 0, body);
    } catch {
      // The connection went away; its close handler reports it.
    }
  }

  private writeMessage(streamId: number, type: number, flags: number, body: Uint8Array): void {
    const header = Buffer.allocUnsafe(HEADER_LENGTH);
    header.writeUInt32BE(body.length, 0);
    header.writeUInt32BE(streamId, 4);
    header[8] = type;
    header[9] = flags;
    this.send(Buffer.concat([header, body]));
  }
}
