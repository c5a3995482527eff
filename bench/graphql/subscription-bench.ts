// Subscriptions at scale: N graphql-ws subscribers (one WebSocket each) on one chat room of a server
// in its own process, then a burst of mutations, each published to every subscriber. Measures the
// server's CPU time per delivery (deliveries per CPU-second: per core), publish→receipt latency, RSS
// per connected subscriber, and lost or duplicated messages. Same schema and logic for every server
// (chat-servers.ts); the subscribers and the mutations run in this process.
import WebSocket from 'ws';
import { readFileSync } from 'node:fs';
import { cpuSeconds, startServerProcess } from './http-bench.ts';
import { chatServers } from './chat-servers.ts';

export const subscriptionServers = chatServers.map((s) => s.name);

export interface SubscriptionMeasurement {
  server: string;
  label: string;
  subscribers: number;
  /** Mutations per burst, and timed bursts (repeated until the deliveries are enough to time the CPU). */
  events: number;
  bursts: number;
  /** Bursts run first and left out of every figure but lost and duplicated. */
  warmupBursts: number;
  /** Messages the subscribers received from the timed bursts (events × bursts × subscribers when none is lost). */
  deliveries: number;
  /** Server CPU seconds (user + system) from the first timed mutation to the last receipt. */
  cpuSeconds: number;
  deliveriesPerCoreSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** (RSS with every subscriber connected − RSS idle) / subscribers, in KB. */
  kbPerSubscriber: number;
  /** (RSS with all − RSS with half of them connected) / the other half, in KB: without fixed costs. */
  marginalKbPerSubscriber: number;
  lost: number;
  duplicated: number;
}

export interface SubscriptionBenchOptions {
  servers: string[];
  subscribers: number[];
  events: number;
  /** Deliveries to time per cell at least (bursts repeat up to 40 times). Default 200,000. */
  minDeliveries?: number;
  /**
   * Untimed bursts before the timed ones, so that latency and CPU are the steady state's, not the
   * compilers' first pass over the hot path (the cold-start part measures that). Default 1.
   */
  warmupBursts?: number;
  log: (line: string) => void;
}

const ROOM = 'bench';
const SUBSCRIPTION = `subscription { messageAdded(room: "${ROOM}") { id author text createdAt } }`;
const POST = 'mutation Post($text: String!) { postMessage(room: "bench", author: "bench", text: $text) { id } }';

/** The text of a burst event, `b <seq>`, in a `next` frame. */
const BURST_MARK = Buffer.from('"text":"b ');

/** The sequence number of a burst event's frame, read from the bytes (no string, no regex), or -1. */
function burstSeq(frame: Buffer): number {
  const at = frame.indexOf(BURST_MARK);
  if (at < 0) return -1;
  let seq = 0;
  let i = at + BURST_MARK.length;
  for (let c = frame[i]; c >= 0x30 && c <= 0x39; c = frame[++i]) seq = seq * 10 + (c - 0x30);
  return i > at + BURST_MARK.length && frame[i] === 0x22 ? seq : -1;
}

function rssKb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN);
}

async function waitFor(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

interface Subscriber {
  socket: WebSocket;
  /** Burst events seen, by sequence number (a count, to spot duplicates). */
  seen: Uint8Array;
  warm: boolean;
  acked: boolean;
}

async function post(url: string, text: string): Promise<void> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ query: POST, variables: { text } }),
    signal: AbortSignal.timeout(30_000),
  });
  const body = await response.text();
  if (response.status !== 200 || body.includes('"errors"')) throw new Error(`postMessage answered ${response.status}: ${body.slice(0, 200)}`);
}

/** Deliveries timed per cell at least by default: /proc counts CPU in 10 ms ticks. */
const MIN_DELIVERIES = 200_000;

async function measureOne(name: string, subscribers: number, events: number, minDeliveries: number, warmupBursts: number): Promise<SubscriptionMeasurement> {
  const label = chatServers.find((s) => s.name === name)!.label;
  const bursts = Math.max(1, Math.min(40, Math.round(minDeliveries / (events * subscribers))));
  const total = events * (warmupBursts + bursts);
  const server = await startServerProcess(name);
  const http = `http://127.0.0.1:${server.port}/graphql`;
  const ws = http.replace(/^http/, 'ws');
  const clients: Subscriber[] = [];
  const sentAt = new Float64Array(total);
  const latencies = new Float64Array(total * subscribers);
  let received = 0;
  let duplicated = 0;
  try {
    const connect = (): Promise<void> =>
      new Promise((resolve, reject) => {
        // The subscribers share this process's cores with nothing but each other: keep them cheap (no
        // compression offer, no UTF-8 validation, the sequence number read without a JSON parse).
        const socket = new WebSocket(ws, 'graphql-transport-ws', { perMessageDeflate: false, skipUTF8Validation: true });
        const client: Subscriber = { socket, seen: new Uint8Array(total), warm: false, acked: false };
        clients.push(client);
        socket.once('error', reject);
        socket.once('open', () => socket.send('{"type":"connection_init"}'));
        socket.on('message', (data: Buffer) => {
          const seq = burstSeq(data);
          if (seq >= 0) {
            if (client.seen[seq]++ > 0) duplicated++;
            else latencies[received++] = performance.now() - sentAt[seq];
            return;
          }
          const message = JSON.parse(data.toString()) as { type: string };
          if (message.type === 'next') client.warm = true;
          else if (message.type === 'ping') socket.send('{"type":"pong"}');
          else if (message.type === 'connection_ack') {
            client.acked = true;
            socket.send(JSON.stringify({ type: 'subscribe', id: '1', payload: { query: SUBSCRIPTION } }));
            resolve();
          }
        });
        socket.once('close', (code) => reject(new Error(`a subscriber was closed (${code})`)));
      });
    /** Connects subscribers up to `count`, then publishes until every one saw an event and waits 1 s. */
    const connectUpTo = async (count: number): Promise<void> => {
      while (clients.length < count) await Promise.all(Array.from({ length: Math.min(250, count - clients.length) }, connect));
      // Nothing says when a subscription is registered: publish until every subscriber saw one event.
      for (let attempt = 0; !clients.every((c) => c.warm); attempt++) {
        if (attempt > 300) throw new Error(`${clients.filter((c) => !c.warm).length} subscribers never received an event`);
        await post(http, `warm-up ${attempt}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
    };
    // Idle: after one request and one subscriber that came and went, so what both servers build once,
    // lazily (code compiled for the WebSocket path, caches), counts as a fixed cost, not per subscriber.
    await post(http, 'idle');
    await connectUpTo(1);
    const first = clients.pop()!;
    first.socket.removeAllListeners('close');
    let gone = false;
    first.socket.once('close', () => {
      gone = true;
    });
    first.socket.close();
    await waitFor(() => gone, 10_000, 'the first subscriber to close');
    await new Promise((resolve) => setTimeout(resolve, 500));
    const idleKb = rssKb(server.pid);

    const half = subscribers >> 1;
    await connectUpTo(half);
    const halfKb = rssKb(server.pid);
    await connectUpTo(subscribers);
    const connectedKb = rssKb(server.pid);

    let cpuBefore = cpuSeconds(server.pid) ?? Number.NaN;
    let sent = 0;
    // Every delivery of a burst arrives before the next one starts, so the warm-up's latencies are
    // exactly the first `warmupDeliveries` recorded.
    const warmupDeliveries = warmupBursts * events * subscribers;
    for (let burst = 0; burst < warmupBursts + bursts; burst++) {
      if (burst === warmupBursts) cpuBefore = cpuSeconds(server.pid) ?? Number.NaN;
      // A burst: `events` mutations, 8 in flight at a time; then every delivery, then a pause.
      const end = sent + events;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (sent < end) {
            const seq = sent++;
            sentAt[seq] = performance.now();
            await post(http, `b ${seq}`);
          }
        }),
      );
      const expected = end * subscribers;
      const arrived = await waitFor(() => received >= expected, 60_000 + expected / 10, 'deliveries').then(
        () => true,
        () => false,
      );
      if (!arrived) break;
      if (burst + 1 < warmupBursts + bursts) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const cpu = (cpuSeconds(server.pid) ?? Number.NaN) - cpuBefore;
    const expected = total * subscribers;
    // Late duplicates would show within a moment.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const timed = Math.max(0, received - warmupDeliveries);
    const sorted = latencies.slice(warmupDeliveries, received).sort();
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
    return {
      server: name,
      label,
      subscribers,
      events,
      bursts,
      warmupBursts,
      deliveries: timed,
      cpuSeconds: cpu,
      deliveriesPerCoreSecond: timed / cpu,
      p50Ms: at(0.5),
      p99Ms: at(0.99),
      kbPerSubscriber: (connectedKb - idleKb) / subscribers,
      marginalKbPerSubscriber: (connectedKb - halfKb) / (subscribers - half),
      lost: expected - received,
      duplicated,
    };
  } finally {
    for (const client of clients) {
      client.socket.removeAllListeners('close');
      client.socket.on('error', () => {});
      client.socket.terminate();
    }
    await server.stop();
  }
}

/** Every subscriber count, every server in turn (same order each time), one fresh process each. */
export async function runSubscriptionBench(options: SubscriptionBenchOptions): Promise<SubscriptionMeasurement[]> {
  const results: SubscriptionMeasurement[] = [];
  for (const subscribers of options.subscribers) {
    for (const name of options.servers) {
      const m = await measureOne(name, subscribers, options.events, options.minDeliveries ?? MIN_DELIVERIES, options.warmupBursts ?? 1);
      results.push(m);
      options.log(
        `  ${m.label.padEnd(28)} ${String(subscribers).padStart(5)} subscribers: ${Math.round(m.deliveriesPerCoreSecond)} deliveries/CPU-s, ` +
          `p50 ${m.p50Ms.toFixed(0)} ms, p99 ${m.p99Ms.toFixed(0)} ms, ${m.kbPerSubscriber.toFixed(1)} KB/subscriber ` +
          `(${m.marginalKbPerSubscriber.toFixed(1)} marginal), ${m.bursts} timed burst${m.bursts > 1 ? 's' : ''} after ${m.warmupBursts} warm-up, lost ${m.lost}, duplicated ${m.duplicated}`,
      );
    }
  }
  return results;
}

/** The markdown table, one row per subscriber count and server, with skiff's ratios to Mercurius. */
export function subscriptionTable(results: SubscriptionMeasurement[]): string {
  const lines = [
    '| subscribers | server | deliveries / CPU-s | p50 | p99 | KB / subscriber (marginal) | lost | duplicated |',
    '| ----------: | ------ | -----------------: | --: | --: | -------------------------: | ---: | ---------: |',
  ];
  for (const m of results) {
    lines.push(
      `| ${m.subscribers} | ${m.label} | ${Math.round(m.deliveriesPerCoreSecond)} | ${m.p50Ms.toFixed(0)} ms | ${m.p99Ms.toFixed(0)} ms | ${m.kbPerSubscriber.toFixed(1)} (${m.marginalKbPerSubscriber.toFixed(1)}) | ${m.lost} | ${m.duplicated} |`,
    );
  }
  const targets: string[] = [];
  for (const n of new Set(results.map((m) => m.subscribers))) {
    const ours = results.find((m) => m.server === 'chat-skiff' && m.subscribers === n);
    const theirs = results.find((m) => m.server === 'chat-mercurius' && m.subscribers === n);
    if (!ours || !theirs) continue;
    const perCore = ours.deliveriesPerCoreSecond / theirs.deliveriesPerCoreSecond;
    const p99 = ours.p99Ms / theirs.p99Ms;
    targets.push(
      `${n} subscribers: ${perCore.toFixed(2)}× Mercurius's deliveries per core${n >= 1000 ? (perCore >= 2 ? ' (target ≥ 2×: met)' : ' (target ≥ 2×: MISSED)') : ''}, ` +
        `p99 ${p99.toFixed(2)}× its p99 (target ≤ 0.5×: ${p99 <= 0.5 ? 'met' : 'MISSED'}), ` +
        `${ours.kbPerSubscriber.toFixed(1)} KB per subscriber (target ≤ 15: ${ours.kbPerSubscriber <= 15 ? 'met' : 'MISSED'}), ` +
        `lost/duplicated ${ours.lost}/${ours.duplicated}`,
    );
  }
  return [...lines, '', ...targets].join('\n');
}
