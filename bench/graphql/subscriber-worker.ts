// One thread of the subscription bench's subscribers: its share of the graphql-ws sockets, each on
// the bench room. Every burst event it receives goes into shared memory as (event, monotonic time),
// so the main thread times deliveries without a message per frame. Several of these threads read
// the server's frames in parallel, so a single event loop's turn through thousands of sockets is not
// what the bench measures.
import { parentPort, workerData } from 'node:worker_threads';
import WebSocket from 'ws';
import { performanceToMonotonic } from './publish-clock.ts';

export interface SubscriberWorkerData {
  url: string;
  subscription: string;
  /** Events that may arrive (sequence numbers 0 … events − 1). */
  events: number;
  /** This thread's receipts: event and monotonic ms, `capacity` slots. */
  receiptSeq: SharedArrayBuffer;
  receiptAt: SharedArrayBuffer;
  capacity: number;
  /** Int32 counters shared by all threads: see COUNTER. */
  counters: SharedArrayBuffer;
}

export const COUNTER = { received: 0, duplicated: 1, warm: 2, open: 3 } as const;

export type WorkerCommand = { type: 'connect'; upTo: number } | { type: 'close-all' };
export type WorkerReply = { type: 'done' } | { type: 'error'; message: string };

/** The text of a burst event, `b <seq>`, in a `next` frame. */
const BURST_MARK = Buffer.from('"text":"b ');

/** The sequence number of a burst event's frame, read from the bytes (no string, no regex), or -1. */
export function burstSeq(frame: Buffer): number {
  const at = frame.indexOf(BURST_MARK);
  if (at < 0) return -1;
  let seq = 0;
  let i = at + BURST_MARK.length;
  for (let c = frame[i]; c >= 0x30 && c <= 0x39; c = frame[++i]) seq = seq * 10 + (c - 0x30);
  return i > at + BURST_MARK.length && frame[i] === 0x22 ? seq : -1;
}

function run(data: SubscriberWorkerData): void {
  const receiptSeq = new Int32Array(data.receiptSeq);
  const receiptAt = new Float64Array(data.receiptAt);
  const counters = new Int32Array(data.counters);
  const sockets: WebSocket[] = [];
  let stored = 0;
  const reply = (message: WorkerReply) => parentPort!.postMessage(message);

  const connect = (): Promise<void> =>
    new Promise((resolve, reject) => {
      // Kept cheap: no compression offer, no UTF-8 validation, the sequence number read without a parse.
      const socket = new WebSocket(data.url, 'graphql-transport-ws', { perMessageDeflate: false, skipUTF8Validation: true });
      const seen = new Uint8Array(data.events);
      let warm = false;
      sockets.push(socket);
      socket.once('error', reject);
      socket.once('open', () => socket.send('{"type":"connection_init"}'));
      socket.on('message', (frame: Buffer) => {
        const seq = burstSeq(frame);
        if (seq >= 0) {
          const now = performance.now() + performanceToMonotonic;
          if (seen[seq]++ > 0) Atomics.add(counters, COUNTER.duplicated, 1);
          else if (stored < data.capacity) {
            receiptSeq[stored] = seq;
            receiptAt[stored++] = now;
            Atomics.add(counters, COUNTER.received, 1);
          }
          return;
        }
        const message = JSON.parse(frame.toString()) as { type: string };
        if (message.type === 'next') {
          if (!warm) Atomics.add(counters, COUNTER.warm, 1);
          warm = true;
        } else if (message.type === 'ping') socket.send('{"type":"pong"}');
        else if (message.type === 'connection_ack') {
          socket.send(JSON.stringify({ type: 'subscribe', id: '1', payload: { query: data.subscription } }));
          Atomics.add(counters, COUNTER.open, 1);
          resolve();
        }
      });
      socket.once('close', (code) => {
        if (!closing) reply({ type: 'error', message: `a subscriber was closed (${code})` });
        if (warm) Atomics.sub(counters, COUNTER.warm, 1);
        Atomics.sub(counters, COUNTER.open, 1);
      });
    });

  let closing = false;
  parentPort!.on('message', (command: WorkerCommand) => {
    const work =
      command.type === 'connect'
        ? (async () => {
            while (sockets.length < command.upTo) await Promise.all(Array.from({ length: Math.min(250, command.upTo - sockets.length) }, connect));
          })()
        : (async () => {
            closing = true;
            const closed = sockets.splice(0).map(
              (socket) =>
                new Promise((resolve) => {
                  socket.once('close', resolve);
                  socket.close();
                }),
            );
            await Promise.all(closed);
            closing = false;
          })();
    work.then(
      () => reply({ type: 'done' }),
      (error: unknown) => reply({ type: 'error', message: error instanceof Error ? error.message : String(error) }),
    );
  });
}

if (parentPort && workerData) run(workerData as SubscriberWorkerData);
