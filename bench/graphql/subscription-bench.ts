// Subscriptions at scale: N subscribers (one WebSocket or one SSE response each) on one chat room of a server
// in its own process. Bursts of mutations, each published to every subscriber, measure the server's
// CPU time per delivery (deliveries per CPU-second: per core) and the wait from sending a mutation to
// each receipt at saturation; then mutations at a fixed rate measure latency from the publish in the
// server to each receipt. Also RSS per connected subscriber, and lost or duplicated messages. Same
// schema and logic for every server (chat-servers.ts); the subscribers and the mutations run in this
// process.
import { readFileSync } from 'node:fs';
import { startServerProcess } from './http-bench.ts';
import { fixed, ratio, times } from './figures.ts';
import { chatServers } from './chat-servers.ts';
import { monotonicMs } from './publish-clock.ts';
import { SubscriberPool } from './subscriber-pool.ts';

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
  /** Events sent at a fixed rate after the bursts, and that rate in deliveries per second. */
  pacedEvents: number;
  pacedDeliveriesPerSecond: number;
  /** Messages the subscribers received from the timed bursts (events × bursts × subscribers when none is lost). */
  deliveries: number;
  /** Server CPU seconds (user + system, to the microsecond) from the first timed mutation to the last receipt. */
  cpuSeconds: number;
  /** Undefined when the server's CPU time over the bursts could not be measured (read as zero). */
  deliveriesPerCoreSecond: number | undefined;
  /**
   * At the fixed rate: from the resolver's publish in the server to each subscriber's receipt, on one
   * monotonic clock.
   */
  p50Ms: number;
  p99Ms: number;
  /**
   * At the fixed rate, per event: when its first subscriber had it. How soon the server gets an event
   * out; the rest of p50/p99 is the fan-out's spread, mostly the subscribers' reading on shared cores.
   */
  firstP50Ms: number;
  firstP99Ms: number;
  /** In the bursts: from sending the mutation to each receipt (every mutation's wait included). */
  burstP50Ms: number;
  burstP99Ms: number;
  /**
   * In the bursts, from the publish. At saturation the measuring client is the bottleneck, so this is
   * mostly its backlog, which grows the faster a server publishes.
   */
  burstPublishP50Ms: number;
  burstPublishP99Ms: number;
  /**
   * (heap used + external memory with every subscriber connected − the same idle) / subscribers, in KB,
   * each read after a full garbage collection: what the server holds per subscriber.
   */
  liveKbPerSubscriber: number;
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
  /** Deliveries per second offered in the fixed-rate part (events/s = this / subscribers). Default 20,000. */
  pacedRate?: number;
  /** Length of the fixed-rate part in seconds (20 events at least). Default 5. */
  pacedSeconds?: number;
  /** Threads the subscribers are spread over, each with its own event loop. Default 2. */
  threads?: number;
  log: (line: string) => void;
}

const ROOM = 'bench';
const SUBSCRIPTION = `subscription { messageAdded(room: "${ROOM}") { id author text createdAt } }`;
const POST = 'mutation Post($text: String!) { postMessage(room: "bench", author: "bench", text: $text) { id } }';

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

/** Deliveries timed per cell at least by default: enough for a steady rate, not for the CPU clock's sake. */
const MIN_DELIVERIES = 200_000;

interface CellOptions {
  threads: number;
  subscribers: number;
  events: number;
  minDeliveries: number;
  warmupBursts: number;
  pacedRate: number;
  pacedSeconds: number;
}

/** Sorted values' quantile `q` (nearest rank). */
function quantile(sorted: Float64Array, q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

async function measureOne(name: string, cell: CellOptions): Promise<SubscriptionMeasurement> {
  const { subscribers, events, warmupBursts } = cell;
  const { label, nodeFlags, transport } = chatServers.find((s) => s.name === name)!;
  const bursts = Math.max(1, Math.min(40, Math.round(cell.minDeliveries / (events * subscribers))));
  const warmupEvents = events * warmupBursts;
  const burstEvents = events * (warmupBursts + bursts);
  const eventsPerSecond = cell.pacedRate / subscribers;
  const pacedEvents = Math.max(20, Math.round(cell.pacedSeconds * eventsPerSecond));
  const total = burstEvents + pacedEvents;
  const server = await startServerProcess(name, undefined, [...nodeFlags, '--expose-gc']);
  const http = `http://127.0.0.1:${server.port}/graphql`;
  const url = transport === 'sse' ? http : http.replace(/^http/, 'ws');
  const pool = new SubscriberPool(url, transport, SUBSCRIPTION, subscribers, total, Math.min(cell.threads, subscribers));
  /** When each event's mutation was sent (monotonic ms). */
  const sentAt = new Float64Array(total);
  const received = () => {
    if (pool.failure) throw pool.failure;
    return pool.received;
  };
  try {
    /** Connects subscribers up to `count`, then publishes until every one saw an event and waits 1 s. */
    const connectUpTo = async (count: number): Promise<void> => {
      await pool.connectUpTo(count);
      // Nothing says when a subscription is registered: publish until every subscriber saw one event.
      for (let attempt = 0; pool.warm < count; attempt++) {
        if (pool.failure) throw pool.failure;
        if (attempt > 300) throw new Error(`${count - pool.warm} subscribers never received an event`);
        await post(http, `warm-up ${attempt}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
    };
    // Idle: after one request and one subscriber that came and went, so what both servers build once,
    // lazily (code compiled for the WebSocket path, caches), counts as a fixed cost, not per subscriber.
    await post(http, 'idle');
    await connectUpTo(1);
    await pool.closeAll();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const idleKb = rssKb(server.pid);
    const idleLive = await server.liveBytes();

    const half = subscribers >> 1;
    await connectUpTo(half);
    const halfKb = rssKb(server.pid);
    await connectUpTo(subscribers);
    const connectedKb = rssKb(server.pid);
    // After the RSS reading: the collection returns pages the RSS figure would otherwise still count.
    const connectedLive = await server.liveBytes();

    let cpuBefore = await server.cpuSeconds();
    let sent = 0;
    for (let burst = 0; burst < warmupBursts + bursts; burst++) {
      if (burst === warmupBursts) cpuBefore = await server.cpuSeconds();
      // A burst: `events` mutations, 8 in flight at a time; then every delivery, then a pause.
      const end = sent + events;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (sent < end) {
            const seq = sent++;
            sentAt[seq] = monotonicMs();
            await post(http, `b ${seq}`);
          }
        }),
      );
      const expected = end * subscribers;
      const arrived = await waitFor(() => received() >= expected, 60_000 + expected / 10, 'deliveries').then(
        () => true,
        () => false,
      );
      if (!arrived) break;
      if (burst + 1 < warmupBursts + bursts) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const cpu = (await server.cpuSeconds()) - cpuBefore;
    await new Promise((resolve) => setTimeout(resolve, 100));

    // At a fixed rate, sent on schedule whatever is still in flight (an open loop), well below what
    // either server and these subscribers can carry: latency without a queue in front of it.
    const interval = 1000 / eventsPerSecond;
    const pacedStart = performance.now() + 100;
    const inFlight: Promise<void>[] = [];
    for (let i = 0; i < pacedEvents; i++) {
      const seq = burstEvents + i;
      const wait = pacedStart + i * interval - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      sentAt[seq] = monotonicMs();
      inFlight.push(post(http, `b ${seq}`));
    }
    await Promise.all(inFlight);
    const expected = total * subscribers;
    await waitFor(() => received() >= expected, 60_000, 'the fixed-rate deliveries').catch(() => {});
    // Late duplicates would show within a moment.
    await new Promise((resolve) => setTimeout(resolve, 300));

    const publishedAt = new Float64Array(total).fill(Number.NaN);
    for (const [seq, at] of await server.publishTimes()) if (seq < total) publishedAt[seq] = at;
    const receipts = pool.receipts();
    const burst: number[] = [];
    const burstPublish: number[] = [];
    const paced: number[] = [];
    /** Per fixed-rate event, its first subscriber's wait: the server's part, before the fan-out's spread. */
    const pacedFirst = new Float64Array(pacedEvents).fill(Number.POSITIVE_INFINITY);
    for (let d = 0; d < receipts.seq.length; d++) {
      const seq = receipts.seq[d];
      const fromPublish = receipts.at[d] - publishedAt[seq];
      if (Number.isNaN(fromPublish)) throw new Error(`${name} did not record the publish of event ${seq}`);
      if (seq >= burstEvents) {
        paced.push(fromPublish);
        pacedFirst[seq - burstEvents] = Math.min(pacedFirst[seq - burstEvents], fromPublish);
      } else if (seq >= warmupEvents) {
        burstPublish.push(fromPublish);
        burst.push(receipts.at[d] - sentAt[seq]);
      }
    }
    const sorted = (values: number[]) => Float64Array.from(values).sort();
    const [burstSorted, burstPublishSorted, pacedSorted] = [sorted(burst), sorted(burstPublish), sorted(paced)];
    const firstSorted = pacedFirst.filter(Number.isFinite).sort();
    return {
      server: name,
      label,
      subscribers,
      events,
      bursts,
      warmupBursts,
      pacedEvents,
      pacedDeliveriesPerSecond: cell.pacedRate,
      deliveries: burst.length,
      cpuSeconds: cpu,
      deliveriesPerCoreSecond: ratio(burst.length, cpu),
      p50Ms: quantile(pacedSorted, 0.5),
      p99Ms: quantile(pacedSorted, 0.99),
      firstP50Ms: quantile(firstSorted, 0.5),
      firstP99Ms: quantile(firstSorted, 0.99),
      burstP50Ms: quantile(burstSorted, 0.5),
      burstP99Ms: quantile(burstSorted, 0.99),
      burstPublishP50Ms: quantile(burstPublishSorted, 0.5),
      burstPublishP99Ms: quantile(burstPublishSorted, 0.99),
      liveKbPerSubscriber: (connectedLive - idleLive) / 1024 / subscribers,
      kbPerSubscriber: (connectedKb - idleKb) / subscribers,
      marginalKbPerSubscriber: (connectedKb - halfKb) / (subscribers - half),
      lost: expected - pool.received,
      duplicated: pool.duplicated,
    };
  } finally {
    await pool.terminate();
    await server.stop();
  }
}

/** Every subscriber count, every server in turn (same order each time), one fresh process each. */
export async function runSubscriptionBench(options: SubscriptionBenchOptions): Promise<SubscriptionMeasurement[]> {
  const results: SubscriptionMeasurement[] = [];
  for (const subscribers of options.subscribers) {
    for (const name of options.servers) {
      const m = await measureOne(name, {
        subscribers,
        events: options.events,
        minDeliveries: options.minDeliveries ?? MIN_DELIVERIES,
        warmupBursts: options.warmupBursts ?? 1,
        pacedRate: options.pacedRate ?? 20_000,
        pacedSeconds: options.pacedSeconds ?? 5,
        threads: options.threads ?? 2,
      });
      results.push(m);
      options.log(
        `  ${m.label.padEnd(28)} ${String(subscribers).padStart(5)} subscribers: ${fixed(m.deliveriesPerCoreSecond, 0)} deliveries/CPU-s, ` +
          `bursts p50 ${m.burstP50Ms.toFixed(1)} ms, p99 ${m.burstP99Ms.toFixed(1)} ms from the request (${m.burstPublishP50Ms.toFixed(1)} / ${m.burstPublishP99Ms.toFixed(1)} ms from the publish), ` +
          `fixed rate publish→receipt p50 ${m.p50Ms.toFixed(1)} ms, p99 ${m.p99Ms.toFixed(1)} ms (first subscriber ${m.firstP50Ms.toFixed(2)} / ${m.firstP99Ms.toFixed(2)} ms), ${m.liveKbPerSubscriber.toFixed(1)} KB/subscriber live (RSS ${m.kbPerSubscriber.toFixed(1)}, ` +
          `${m.marginalKbPerSubscriber.toFixed(1)} marginal), ${m.bursts} timed burst${m.bursts > 1 ? 's' : ''} after ${m.warmupBursts} warm-up, lost ${m.lost}, duplicated ${m.duplicated}`,
      );
    }
  }
  return results;
}

/** The markdown table, one row per subscriber count and server, with skiff's ratios to Mercurius and, over SSE, to graphql-yoga. */
export function subscriptionTable(results: SubscriptionMeasurement[]): string {
  const lines = [
    '| subscribers | server | bursts: deliveries / CPU-s | bursts: p50 / p99 from the request | fixed rate: p50 / p99 publish → receipt | fixed rate: first subscriber p50 / p99 | KB / subscriber: live · RSS (marginal) | lost | duplicated |',
    '| ----------: | ------ | -------------------------: | ---------------------------------: | --------------------------------------: | -------------------------------------: | -------------------------------------: | ---: | ---------: |',
  ];
  for (const m of results) {
    lines.push(
      `| ${m.subscribers} | ${m.label} | ${fixed(m.deliveriesPerCoreSecond, 0)} | ${m.burstP50Ms.toFixed(0)} / ${m.burstP99Ms.toFixed(0)} ms | ${m.p50Ms.toFixed(1)} / ${m.p99Ms.toFixed(1)} ms | ${m.firstP50Ms.toFixed(2)} / ${m.firstP99Ms.toFixed(2)} ms | ${m.liveKbPerSubscriber.toFixed(1)} · ${m.kbPerSubscriber.toFixed(1)} (${m.marginalKbPerSubscriber.toFixed(1)}) | ${m.lost} | ${m.duplicated} |`,
    );
  }
  const targets: string[] = [];
  const find = (server: string, n: number) => results.find((m) => m.server === server && m.subscribers === n);
  for (const n of new Set(results.map((m) => m.subscribers))) {
    const ours = find('chat-skiff', n);
    const theirs = find('chat-mercurius', n);
    if (ours && theirs) {
      const perCore = ratio(ours.deliveriesPerCoreSecond, theirs.deliveriesPerCoreSecond);
      const p99 = ratio(ours.p99Ms, theirs.p99Ms);
      const meets = (r: number | undefined, ok: (r: number) => boolean) => (r === undefined ? 'not measured' : ok(r) ? 'met' : 'MISSED');
      targets.push(
        `${n} subscribers: ${times(perCore)} Mercurius's deliveries per core${n >= 1000 ? ` (target ≥ 2×: ${meets(perCore, (r) => r >= 2)})` : ''}, ` +
          `publish→receipt p99 at a fixed rate ${times(p99)} its p99 (target ≤ 0.5×: ${meets(p99, (r) => r <= 0.5)}; first subscriber ${times(ratio(ours.firstP99Ms, theirs.firstP99Ms))}; in the bursts, from the request, ${times(ratio(ours.burstP99Ms, theirs.burstP99Ms))}), ` +
          `${ours.liveKbPerSubscriber.toFixed(1)} KB per subscriber live (target ≤ 12: ${ours.liveKbPerSubscriber <= 12 ? 'met' : 'MISSED'}; RSS ${ours.kbPerSubscriber.toFixed(1)}), ` +
          `lost/duplicated ${ours.lost}/${ours.duplicated}`,
      );
    }
    const sse = find('chat-skiff-sse', n);
    const yoga = find('chat-yoga-sse', n);
    if (sse && yoga) {
      const perCore = ratio(sse.deliveriesPerCoreSecond, yoga.deliveriesPerCoreSecond);
      const line = [
        `${n} subscribers over SSE: ${times(perCore)} graphql-yoga's deliveries per core (target ≥ 2×: ${perCore === undefined ? 'not measured' : perCore >= 2 ? 'met' : 'MISSED'})`,
      ];
      if (ours) {
        // Cost per delivery is the inverse of deliveries per core.
        const costRatio = ratio(ours.deliveriesPerCoreSecond, sse.deliveriesPerCoreSecond);
        line.push(
          `${times(costRatio)} skiff's WebSocket cost per delivery (target ≤ 1.5×: ${costRatio === undefined ? 'not measured' : costRatio <= 1.5 ? 'met' : 'MISSED'})`,
        );
      }
      line.push(
        `p99 publish→receipt ${times(ratio(sse.p99Ms, yoga.p99Ms))} yoga's`,
        `${sse.liveKbPerSubscriber.toFixed(1)} KB per subscriber live (RSS ${sse.kbPerSubscriber.toFixed(1)})`,
        `lost/duplicated ${sse.lost}/${sse.duplicated}`,
      );
      targets.push(line.join(', '));
    }
  }
  return [...lines, '', ...targets].join('\n');
}
