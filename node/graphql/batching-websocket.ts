// A `ws` WebSocket whose writes within one turn of the event loop leave the process together: the
// first send of a turn corks the TCP socket and a setImmediate uncorks every corked socket, so the
// frames a burst of events sends to one client go out in one writev instead of one syscall each.
// With one event per turn nothing changes but a flush at the end of that turn.
// It also listens more cheaply than ws's addEventListener (see below).
import type { Duplex } from 'node:stream';
import { WebSocket } from 'ws';

const corked: Duplex[] = [];
let flushing = false;

function flush(): void {
  flushing = false;
  for (const socket of corked.splice(0)) if (!socket.destroyed) socket.uncork();
}

/** Corks `ws`'s connection for the rest of this turn, once per turn. */
function corkForThisTurn(ws: WebSocket): void {
  // `_socket` is ws's own field for the connection it writes to.
  const socket = (ws as unknown as { _socket?: Duplex & { writableCorked: number } })._socket;
  if (socket?.writableCorked !== 0 || socket.destroyed) return;
  socket.cork();
  corked.push(socket);
  if (!flushing) {
    flushing = true;
    setImmediate(flush);
  }
}

type Listener = (event: { data?: unknown; code?: number; reason?: string }) => void;

export class BatchingWebSocket extends WebSocket {
  /** The adapter's listeners, called from the shared functions below. */
  onMessageListener: Listener | undefined;
  onCloseListener: Listener | undefined;
  onOpenListener: Listener | undefined;
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
    corkForThisTurn(this);
    baseSend.apply(this, args);
  },
  writable: true,
  configurable: true,
});
