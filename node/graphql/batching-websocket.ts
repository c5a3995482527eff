// A `ws` WebSocket whose writes within one turn of the event loop leave the process together: the
// first send of a turn corks the TCP socket and a setImmediate uncorks every corked socket, so the
// frames a burst of events sends to one client go out in one writev instead of one syscall each.
// With one event per turn nothing changes but a flush at the end of that turn.
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
