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

export class BatchingWebSocket extends WebSocket {}

type Listener = (event: { data?: unknown; code?: number; reason?: string }) => void;

// ws's own addEventListener tags each listener function with symbol properties, which costs about
// a kilobyte per socket in property storage; the adapter needs only these three events, and never
// removes a listener.
Object.defineProperty(BatchingWebSocket.prototype, 'addEventListener', {
  value: function addEventListener(this: WebSocket, type: string, listener: Listener): void {
    if (type === 'message') this.on('message', (data: Buffer, isBinary: boolean) => listener({ data: isBinary ? data : data.toString() }));
    else if (type === 'close') this.on('close', (code: number, reason: Buffer) => listener({ code, reason: reason.toString() }));
    else if (type === 'open') this.on('open', () => listener({}));
    else throw new TypeError(`BatchingWebSocket: no "${type}" events`);
  },
  writable: true,
  configurable: true,
});

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
