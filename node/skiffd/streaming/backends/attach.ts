// Attach: joins the client to the stdio conmon holds for the container. conmon's attach socket is
// SOCK_SEQPACKET: each packet it sends is one type byte (2 stdout, 3 stderr) and the data; what we
// send is written to the container's stdin as is. Terminal resizes go to conmon's `ctl` FIFO as
// `1 HEIGHT WIDTH\n`. For a StdinOnce container, the client's stdin EOF half-closes the socket,
// which makes conmon close the container's stdin.
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AttachStreamRequest } from '../requests.ts';
import type { RemoteCommandIO, TerminalSize } from '../remotecommand.ts';
import { loadSeqpacket } from './seqpacket.ts';
import type { ContainerTarget } from './targets.ts';

const STDOUT = 2;
const STDERR = 3;
/** conmon reads at most this much per packet. */
const MAX_PACKET = 8192;
/** Stdin queued for conmon and not yet taken by the kernel, past which the client's stdin is paused. */
export const STDIN_IN_FLIGHT = 64 * 1024;
/**
 * Output held for a client that does not read, past which the attach ends. The add-on reads
 * conmon's socket whenever it is readable and cannot be paused, so this bounds what one session
 * can make skiffd hold; a client that reads keeps well under it.
 */
export const MAX_UNREAD_OUTPUT = 4 * 1024 * 1024;
/**
 * When the final size of a burst is written again (the gaps, not the times). The last repeat comes
 * about 30 s after the burst, so the size sticks unless conmon was stalled for longer than that.
 */
const RESIZE_REPEAT_MS = [30, 250, 1000, 2000, 4000, 8000, 15000];

export async function attachToContainer(target: ContainerTarget, request: AttachStreamRequest, io: RemoteCommandIO): Promise<void> {
  const { SeqpacketSocket } = await loadSeqpacket();
  const socket = new SeqpacketSocket();
  await new Promise<void>((resolve, reject) => {
    socket.once('error', (err: Error) => reject(new Error(`cannot connect to the attach socket of container ${target.id.slice(0, 12)}: ${err.message}`)));
    try {
      socket.connect(target.attachPath, () => resolve());
    } catch (err) {
      reject(new Error(`cannot connect to the attach socket of container ${target.id.slice(0, 12)} (${target.attachPath}): ${(err as Error).message}`));
    }
  });

  return new Promise<void>((resolve) => {
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      io.signal.removeEventListener('abort', onAbort);
      io.stdin?.unpipe();
      io.stdin?.removeAllListeners('data');
      socket.destroy();
      resolve();
    };
    const onAbort = () => finish();
    io.signal.addEventListener('abort', onAbort, { once: true });

    socket.on('error', () => finish());
    socket.on('end', () => finish());
    socket.on('close', () => finish());
    socket.on('data', (packet: Buffer) => {
      if (packet.length < 1 || done) return;
      const payload = packet.subarray(1);
      const out = packet[0] === STDOUT ? io.stdout : packet[0] === STDERR ? (io.stderr ?? (request.tty ? io.stdout : undefined)) : undefined;
      if (!out || out.destroyed) return;
      out.write(payload);
      if (out.writableLength > MAX_UNREAD_OUTPUT) {
        // The client stopped reading while the container kept writing: end the session rather than
        // hold the output (what was queued still goes out if the client reads again).
        finish();
      }
    });

    if (io.stdin) {
      if (target.stdin) {
        // Back-pressure: the add-on queues every write, so count what the kernel has not taken yet
        // and pause the client's stdin while that is over STDIN_IN_FLIGHT.
        let inFlight = 0;
        const stdin = io.stdin;
        const sent = (n: number) => () => {
          inFlight -= n;
          if (inFlight <= STDIN_IN_FLIGHT && stdin.isPaused() && !done) stdin.resume();
        };
        stdin.on('data', (chunk: Buffer) => {
          for (let off = 0; off < chunk.length && !done; off += MAX_PACKET) {
            const part = chunk.subarray(off, off + MAX_PACKET);
            inFlight += part.length;
            socket.write(part, sent(part.length));
          }
          if (inFlight > STDIN_IN_FLIGHT && !done) stdin.pause();
        });
        io.stdin.on('end', () => {
          if (target.stdinOnce && !done) socket.end();
        });
      } else {
        io.stdin.resume(); // the container has no stdin: what the client types goes nowhere
      }
    }
    if (request.tty) {
      io.resize.subscribeSerially(async (size) => {
        await resizeTerminal(target.ctlPath, size);
        // conmon acts on only the first of several messages that reach it in one read, and clients
        // send two at once (kubectl: width+1 and height+1, then the real size, to force a redraw).
        // So writes are spaced, and the final size is said again, less often each time: a conmon
        // that was not scheduled for seconds (a loaded node) reads the stale size first, then a
        // later repeat on its own. The same size twice changes nothing (no SIGWINCH).
        void (async () => {
          for (const delay of RESIZE_REPEAT_MS) {
            await sleep(delay);
            if (io.resize.last !== size || done) return;
            await resizeTerminal(target.ctlPath, size);
          }
        })();
        await sleep(RESIZE_REPEAT_MS[0]);
      });
    }
  });
}

/** Writes a resize to conmon's ctl FIFO; non-blocking, so a vanished conmon cannot hang us. */
export async function resizeTerminal(ctlPath: string, size: TerminalSize): Promise<void> {
  let handle;
  try {
    handle = await open(ctlPath, constants.O_WRONLY | constants.O_NONBLOCK);
    await handle.write(`1 ${size.height} ${size.width}\n`);
  } catch {
    /* conmon gone (ENXIO) or no terminal: nothing to resize */
  } finally {
    await handle?.close();
  }
}
