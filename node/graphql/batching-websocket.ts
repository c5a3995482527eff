// A `ws` WebSocket whose frames within one turn of the event loop leave the process together after
// the first (turn-corking.ts): an event reaches each client as soon as its fan-out gets there, and a
// burst of events to one client still goes out in one writev instead of one syscall per frame.
// It also listens more cheaply than ws's addEventListener (see below).
import type { Duplex } from 'node:stream';
import { WebSocket } from 'ws';
import { corkAfterFirstWrite, onTurnEnd } from './turn-corking.ts';

/** The last text message sent and its whole WebSocket frame: a fan-out sends one string to many sockets. */
let lastText: string | undefined;
let lastFrame: Buffer | undefined;

/**
 * An unmasked, final text frame (RFC 6455 §5.2) holding `text`: what ws's sender writes for a
 * server's text message without compression, as one buffer that every socket of a fan-out can share.
 */
function textFrame(text: string): Buffer {
  const length = Buffer.byteLength(text);
  const headerLength = length < 126 ? 2 : length < 0x10000 ? 4 : 10;
  const frame = Buffer.allocUnsafe(headerLength + length);
  frame[0] = 0x81; // FIN, opcode 1 (text)
  if (length < 126) frame[1] = length;
  else if (length < 0x10000) {
    frame[1] = 126;
    frame.writeUInt16BE(length, 2);
  } else {
    frame[1] = 127;
    frame.writeUInt32BE(Math.floor(length / 0x1_0000_0000), 2);
    frame.writeUInt32BE(length >>> 0, 6);
  }
  frame.write(text, headerLength, 'utf8');
  return frame;
}

/**
 * ws's own fields this writer relies on: the connection it writes to, no compression (its one
 * extension), and nothing queued in its sender.
 */
interface WsInternals {
  _socket?: Duplex;
  _extensions?: Record<string, unknown>;
  _sender?: { _state?: number };
}

/** Whether a frame may go straight to the TCP socket, bypassing ws's sender without reordering. */
function canWriteDirectly(ws: WebSocket): boolean {
  const internals = ws as unknown as WsInternals;
  return (
    ws.readyState === WebSocket.OPEN &&
    internals._socket !== undefined &&
    internals._extensions !== undefined &&
    internals._extensions['permessage-deflate'] === undefined &&
    internals._sender?._state === 0
  );
}

// The cached frame is for one turn's fan-out; a later turn starts afresh.
onTurnEnd(() => {
  lastText = undefined;
  lastFrame = undefined;
});

type Listener = (event: { data?: unknown; code?: number; reason?: string }) => void;

export class BatchingWebSocket extends WebSocket {
  /** The adapter's listeners, called from the shared functions below. */
  onMessageListener: Listener | undefined;
  onCloseListener: Listener | undefined;
  onOpenListener: Listener | undefined;
  /** The turn this socket last sent a frame in (see turn-corking.ts). */
  sentInTurn = 0;
}

// EventEmitter calls these with the socket as `this`: one function for every socket, not a closure each.
function emitMessage(this: WebSocket, data: Buffer, isBinary: boolean): void {
  (this as BatchingWebSocket).onMessageListener?.({ data: isBinary ? data : data.toString() });
}
function emitClose(this: WebSocket, code: number, reason: Buffer): void {
  (this as BatchingWebSocket).onCloseListener?.({ code, reason: reason.toString() });
}
function emitOpen(this: WebSocket): void {
  (this as BatchingWebSocket).onOpenListener?.({});
}

// ws's own addEventListener tags each listener function with symbol properties, which costs about
// a kilobyte per socket in property storage; the adapter needs only these three events, once each,
// and never removes a listener.
Object.defineProperty(BatchingWebSocket.prototype, 'addEventListener', {
  value: function addEventListener(this: BatchingWebSocket, type: string, listener: Listener): void {
    if (type === 'message') {
      if (!this.onMessageListener) this.on('message', emitMessage);
      this.onMessageListener = both(this.onMessageListener, listener);
    } else if (type === 'close') {
      if (!this.onCloseListener) this.on('close', emitClose);
      this.onCloseListener = both(this.onCloseListener, listener);
    } else if (type === 'open') {
      if (!this.onOpenListener) this.on('open', emitOpen);
      this.onOpenListener = both(this.onOpenListener, listener);
    } else throw new TypeError(`BatchingWebSocket: no "${type}" events`);
  },
  writable: true,
  configurable: true,
});

/** A second listener for one event (rare: the adapter adds one each) calls both, in order. */
function both(first: Listener | undefined, second: Listener): Listener {
  return first
    ? (event) => {
        first(event);
        second(event);
      }
    : second;
}

// On the prototype (ws declares send() with overloads, which an override cannot restate simply).
const baseSend = WebSocket.prototype.send as (this: WebSocket, ...args: unknown[]) => void;
Object.defineProperty(BatchingWebSocket.prototype, 'send', {
  value: function send(this: WebSocket, ...args: unknown[]): void {
    corkAfterFirstWrite(this as BatchingWebSocket, (this as unknown as WsInternals)._socket);
    const data = args[0];
    if (args.length === 1 && typeof data === 'string' && canWriteDirectly(this)) {
      // Framed once per distinct message, not once per socket, and written in one piece.
      if (data !== lastText) {
        lastText = data;
        lastFrame = textFrame(data);
      }
      (this as unknown as WsInternals)._socket!.write(lastFrame);
      return;
    }
    baseSend.apply(this, args);
  },
  writable: true,
  configurable: true,
});
