// The subscription bench's subscribers, spread over worker threads (subscriber-worker.ts) that
// record each receipt in shared memory.
import { Worker } from 'node:worker_threads';
import { COUNTER, type SubscriberWorkerData, type WorkerCommand, type WorkerReply } from './subscriber-worker.ts';

const workerFile = new URL('./subscriber-worker.ts', import.meta.url);

export interface Receipts {
  /** Per delivery: its event's sequence number and when it arrived (monotonic ms). */
  seq: Int32Array;
  at: Float64Array;
}

export class SubscriberPool {
  readonly #workers: Worker[] = [];
  readonly #data: SubscriberWorkerData[] = [];
  readonly #counters: Int32Array;
  /** Per worker: one command at a time, answered in order. */
  readonly #pending: Array<{ resolve(): void; reject(error: Error): void } | undefined> = [];
  #failure: Error | undefined;

  /** `threads` workers for up to `subscribers` sockets receiving up to `events` events each. */
  constructor(url: string, transport: 'websocket' | 'sse', subscription: string, subscribers: number, events: number, threads: number) {
    const counters = new SharedArrayBuffer(4 * 4);
    this.#counters = new Int32Array(counters);
    for (let i = 0; i < threads; i++) {
      const share = Math.ceil(subscribers / threads) + 1;
      const capacity = share * events;
      const data: SubscriberWorkerData = {
        url,
        transport,
        subscription,
        events,
        receiptSeq: new SharedArrayBuffer(4 * capacity),
        receiptAt: new SharedArrayBuffer(8 * capacity),
        capacity,
        counters,
      };
      const worker = new Worker(workerFile, { workerData: data });
      worker.on('message', (reply: WorkerReply) => {
        const pending = this.#pending[i];
        this.#pending[i] = undefined;
        if (reply.type === 'error') {
          this.#failure ??= new Error(`subscriber thread ${i}: ${reply.message}`);
          pending?.reject(this.#failure);
        } else pending?.resolve();
      });
      worker.on('error', (error) => {
        this.#failure ??= error;
        this.#pending[i]?.reject(error);
      });
      this.#workers.push(worker);
      this.#data.push(data);
    }
  }

  get received(): number {
    return Atomics.load(this.#counters, COUNTER.received);
  }
  get duplicated(): number {
    return Atomics.load(this.#counters, COUNTER.duplicated);
  }
  /** Subscribers that have seen at least one event. */
  get warm(): number {
    return Atomics.load(this.#counters, COUNTER.warm);
  }
  get open(): number {
    return Atomics.load(this.#counters, COUNTER.open);
  }
  /** Set once a thread reported a failure (a subscriber closed by the server, a failed connect). */
  get failure(): Error | undefined {
    return this.#failure;
  }

  #command(i: number, command: WorkerCommand, timeoutMs: number): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`subscriber thread ${i} did not finish "${command.type}" within ${timeoutMs} ms`)), timeoutMs);
      this.#pending[i] = {
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      this.#workers[i].postMessage(command);
    });
  }

  /** Opens sockets until `count` are subscribed, spread evenly over the threads. */
  async connectUpTo(count: number): Promise<void> {
    const n = this.#workers.length;
    await Promise.all(this.#workers.map((_, i) => this.#command(i, { type: 'connect', upTo: Math.floor(count / n) + (i < count % n ? 1 : 0) }, 120_000)));
  }

  /** Closes every socket (a normal close) and waits for the server's close frames. */
  async closeAll(): Promise<void> {
    await Promise.all(this.#workers.map((_, i) => this.#command(i, { type: 'close-all' }, 30_000)));
  }

  /** Every receipt recorded so far, from all threads. */
  receipts(): Receipts {
    const seq: number[] = [];
    const at: number[] = [];
    // Each thread fills its own slots from the first; a time is never 0, so 0 ends them.
    for (const data of this.#data) {
      const s = new Int32Array(data.receiptSeq);
      const a = new Float64Array(data.receiptAt);
      for (let k = 0; k < data.capacity; k++) {
        if (a[k] === 0) break;
        seq.push(s[k]);
        at.push(a[k]);
      }
    }
    return { seq: Int32Array.from(seq), at: Float64Array.from(at) };
  }

  async terminate(): Promise<void> {
    await Promise.all(this.#workers.map((w) => w.terminate()));
  }
}
