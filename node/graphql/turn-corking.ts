// Writes to one connection within one turn of the event loop leave the process together after the
// first: a connection's first write of a turn goes out at once, a second one corks the socket, and a
// setImmediate at the end of the turn uncorks every corked socket. So an event reaches each client as
// soon as its fan-out gets there, and a burst of events to one client still goes out in one writev
// instead of one syscall per frame. The WebSocket and HTTP stream writers share it.
import type { Duplex } from 'node:stream';

const corked: Duplex[] = [];
/** Counts turns in which something was written; a writer remembers the last one it wrote in. */
let turn = 1;
let turnEnding = false;
const turnEndHooks: (() => void)[] = [];

/** Runs `hook` at the end of every turn in which something was written (before the uncorking). */
export function onTurnEnd(hook: () => void): void {
  turnEndHooks.push(hook);
}

function endTurn(): void {
  turnEnding = false;
  turn++;
  for (const hook of turnEndHooks) hook();
  for (const socket of corked.splice(0)) if (!socket.destroyed) socket.uncork();
}

/** One connection's writer: the turn it last wrote in. */
export interface TurnWriter {
  sentInTurn: number;
}

/** Lets `writer`'s first write of this turn through; corks `socket` for the rest of the turn. */
export function corkAfterFirstWrite(writer: TurnWriter, socket: Duplex | undefined): void {
  if (!turnEnding) {
    turnEnding = true;
    setImmediate(endTurn);
  }
  if (writer.sentInTurn !== turn) {
    writer.sentInTurn = turn;
    return;
  }
  if (socket === undefined || socket.writableCorked !== 0 || socket.destroyed) return;
  socket.cork();
  corked.push(socket);
}
