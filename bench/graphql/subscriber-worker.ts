// One thread of the subscription bench's subscribers: its share of the graphql-ws sockets or SSE
// responses (one HTTP/1.1 connection each), each on the bench room. Every burst event it receives goes into shared memory as (event, monotonic time),
// so the main thread times deliveries without a message per frame. Several of these threads read
// the server's frames in parallel, so a single event loop's turn through thousands of sockets is not
// what the bench measures.
import { parentPort, workerData } from 'node:worker_threads';
import { request as httpRequest, type ClientRequest } from 'node:http';
import WebSocket from 'ws';
import { performanceToMonotonic } from './publish-clock.ts';

export interface SubscriberWorkerData {
  /** ws:// for graphql-transport-ws, http:// for server-sent events. */
  url: string;
  transport: 'websocket' | 'sse';
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
  const sockets: { close(): Promise<void> }[] = [];
  let stored = 0;
  const reply = (message: WorkerReply) => parentPort!.postMessage(message);

  /** Counts one burst event's receipt; false for any other frame. */
  const receipt = (frame: Buffer, seen: Uint8Array): boolean => {
    const seq = burstSeq(frame);
    if (seq < 0) return false;
    const now = performance.now() + performanceToMonotonic;
    if (seen[seq]++ > 0) Atomics.add(counters, COUNTER.duplicated, 1);
    else if (stored < data.capacity) {
      receiptSeq[stored] = seq;
      receiptAt[stored++] = now;
      Atomics.add(counters, COUNTER.received, 1);
    }
    return true;
  };

  const NEXT_EVENT = Buffer.from('event: next');
  const EVENT_END = Buffer.from('\n\n');
  const connectSse = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const seen = new Uint8Array(data.events);
      let warm = false;
      let pending: Buffer = Buffer.alloc(0);
      let request: ClientRequest | undefined;
      let ended = false;
      let closed: () => void = () => {};
      const done = new Promise<void>((r) => {
        closed = r;
      });
      const body = JSON.stringify({ query: data.subscription });
      request = httpRequest(data.url, {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'content-length': Buffer.byteLength(body) },
      });
      request.once('error', (error) => {
        if (!ended) reject(error);
      });
      request.once('response', (response) => {
        if (response.statusCode !== 200) {
          reject(new Error(`the SSE subscription was answered ${response.statusCode}`));
          response.resume();
          return;
        }
        Atomics.add(counters, COUNTER.open, 1);
        sockets.push({
          close: () => {
            ended = true;
            request!.destroy();
            return done;
          },
        });
        resolve();
        response.on('data', (chunk: Buffer) => {
          pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
          // Whole events only: an event may arrive in pieces, or several in one chunk.
          let start = 0;
          for (let end = pending.indexOf(EVENT_END, start); end !== -1; end = pending.indexOf(EVENT_END, start)) {
            const event = pending.subarray(start, end);
            start = end + 2;
            if (receipt(event, seen)) continue;
            if (event.indexOf(NEXT_EVENT) === 0 && !warm) {
              warm = true;
              Atomics.add(counters, COUNTER.warm, 1);
            }
          }
          pending = start === pending.length ? Buffer.alloc(0) : pending.subarray(start);
        });
        response.once('close', () => {
          if (!closing && !ended) reply({ type: 'error', message: 'a subscriber stream was closed by the server' });
          if (warm) Atomics.sub(counters, COUNTER.warm, 1);
          Atomics.sub(counters, COUNTER.open, 1);
          closed();
        });
      });
      request.end(body);
    });

  const connectWebSocket = (): Promise<void> =>
    new Promise((resolve, reject) => {
      // Kept cheap: no compression offer, no UTF-8 validation, the sequence number read without a parse.
      const socket = new WebSocket(data.url, 'graphql-transport-ws', { perMessageDeflate: false, skipUTF8Validation: true });
      const seen = new Uint8Array(data.events);
      let warm = false;
      sockets.push({
        close: () =>
          new Promise<void>((resolve) => {
            socket.once('close', () => resolve());
            socket.close();
          }),
      });
      socket.once('error', reject);
      socket.once('open', () => socket.send('{"type":"connection_init"}'));
      socket.on('message', (frame: Buffer) => {
        if (receipt(frame, seen)) return;
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

  const connect = data.transport === 'sse' ? connectSse : connectWebSocket;
  let closing = false;
  parentPort!.on('message', (command: WorkerCommand) => {
    const work =
      command.type === 'connect'
        ? (async () => {
            while (sockets.length < command.upTo) await Promise.all(Array.from({ length: Math.min(250, command.upTo - sockets.length) }, connect));
          })()
        : (async () => {
            closing = true;
            await Promise.all(sockets.splice(0).map((socket) => socket.close()));
            closing = false;
          })();
    work.then(
      () => reply({ type: 'done' }),
      (error: unknown) => reply({ type: 'error', message: error instanceof Error ? error.message : String(error) }),
    );
  });
}

if (parentPort && workerData) run(workerData as SubscriberWorkerData);
