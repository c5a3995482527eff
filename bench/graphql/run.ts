// `npm run bench`: the GraphQL endpoint against its peers on the same countries data.
//  1. HTTP: each server alone in its own process, loaded by autocannon on Q1 GET, Q1 POST, Q2 POST;
//     req/s, p99 and the ratio to a raw Hono endpoint returning the same bytes (the ceiling).
//  2. Interleaved: all servers at once, load moving between them in slices, so background load on a
//     shared machine lands on all of them alike: at saturation (req/s and its ratio to the ceiling's,
//     the measure of part 1 with less noise), then at a fixed rate (server CPU per request).
//  3. Edge, in-process: our handler against graphql-http's plain fetch handler inside workerd and Deno.
//  4. Edge cold start: fresh instances of the workerd (workerd serve and Miniflare) and Deno bundles to their first Q1 body, beside
//     an empty worker (the floor), graphql-yoga and graphql-http; with each bundle's size.
//  5. Subscriptions: skiff and Mercurius on the chat schema, N graphql-ws subscribers on one room:
//     bursts of mutations (deliveries per CPU-second, latency at saturation), then mutations at a
//     fixed rate (publish→receipt latency); memory per subscriber.
import { parseArgs } from 'node:util';
import { coldStartRuntimes, runColdStartBench, type ColdStartMeasurement } from './cold-start-bench.ts';
import { runEdgeBench, edgeRuntimes, type EdgeMeasurement } from './edge-bench.ts';
import { checkAnswer, measure, startServerProcess, type Measurement } from './http-bench.ts';
import { runInterleaved, type InterleavedMeasurement } from './interleaved-bench.ts';
import { benchQueries } from './queries.ts';
import { benchServers, expectedBodies } from './servers.ts';
import { coldStartTable, edgeTable, httpTable, interleavedTable, saturatedTable, targetLines } from './report.ts';
import { median } from './stats.ts';
import { runSubscriptionBench, subscriptionServers, subscriptionTable, type SubscriptionMeasurement } from './subscription-bench.ts';

const usage = `Usage: npm run bench -- [options]

Starts each GraphQL server in its own process, one at a time, and loads it with autocannon on
Q1 GET, Q1 POST and Q2 POST; then runs them all at once, moving the load between them in slices,
at saturation (req/s) and at one fixed request rate (server CPU per request); then times our handler
against graphql-http's inside workerd and Deno, and the cold start of the edge bundles there.

Options:
  --only LIST         servers to run, comma-separated (default: ${benchServers
    .filter((s) => !s.optional)
    .map((s) => s.name)
    .join(', ')});
                      also ${benchServers
                        .filter((s) => s.optional)
                        .map((s) => s.name)
                        .join(', ')}: our Node server answering fixed bytes
                      (ratios need "ceiling" in the list); "none" skips the HTTP and interleaved parts
  --queries LIST      queries to run (default: all): ${benchQueries.map((q) => q.id).join(', ')}
  --duration SECONDS  measured load per query and round (default 5)
  --warmup SECONDS    unmeasured load per query before it, each round (default 2)
  --rounds N          start-load-stop every server this many times, rotating the order; each
                      cell reports its median round (default 3); 0 skips this part
  --connections N     autocannon connections (default 50)
  --sat-slices N      saturating slices per server and query in the interleaved part (default 4);
                      0 skips them
  --cpu-slices N      fixed-rate slices per server and query in the interleaved part (default 4); 0
                      skips them
  --cpu-slice SECONDS length of a slice, either kind (default 2)
  --cpu-rate N        offered req/s for Q1 in the interleaved part (default 4000; Q2 gets a fifth)
  --edge LIST         edge runtimes for the in-process bench (default: workerd,deno,node); "none" skips it
  --edge-requests N   requests per timed batch in the edge bench (default 2000; Q2 gets a fifth)
  --edge-batches N    timed batches per edge cell, median reported (default 5)
  --cold LIST         runtimes for the cold-start part (default: ${coldStartRuntimes.join(',')}); "none" skips it
  --cold-samples N    fresh instances per bundle and runtime, median reported (default 15)
  --subscribers LIST  subscriber counts for the subscription part (default 100,1000,5000); "none" skips it
  --sub-events N      mutations in each subscription burst (default 50); bursts repeat until
                      200,000 deliveries are timed (at most 40 bursts)
  --sub-warmup N      untimed bursts before those, per server and subscriber count (default 1)
  --sub-rate N        deliveries per second offered after the bursts, for publish→receipt
                      latency without a queue (default 20000: 200 events/s to 100 subscribers)
  --sub-rate-seconds S  how long that fixed rate runs (default 5; 20 events at least)
  --json              print the results as JSON instead of tables
  -h, --help          this text`;

function fail(message: string): never {
  console.error(`${message}\n\n${usage}`);
  process.exit(2);
}

let args;
try {
  args = parseArgs({
    options: {
      only: { type: 'string' },
      queries: { type: 'string' },
      duration: { type: 'string', default: '5' },
      rounds: { type: 'string', default: '3' },
      warmup: { type: 'string', default: '2' },
      connections: { type: 'string', default: '50' },
      edge: { type: 'string', default: edgeRuntimes.join(',') },
      'sat-slices': { type: 'string', default: '4' },
      'cpu-slices': { type: 'string', default: '4' },
      'cpu-slice': { type: 'string', default: '2' },
      'cpu-rate': { type: 'string', default: '4000' },
      'edge-requests': { type: 'string', default: '2000' },
      'edge-batches': { type: 'string', default: '5' },
      cold: { type: 'string', default: coldStartRuntimes.join(',') },
      'cold-samples': { type: 'string', default: '15' },
      subscribers: { type: 'string', default: '100,1000,5000' },
      'sub-rate': { type: 'string', default: '20000' },
      'sub-rate-seconds': { type: 'string', default: '5' },
      'sub-events': { type: 'string', default: '50' },
      'sub-warmup': { type: 'string', default: '1' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: false,
  }).values;
} catch (error) {
  fail((error as Error).message);
}
if (args.help) {
  console.log(usage);
  process.exit(0);
}

function sliceCount(name: string, value: string): number {
  const n = Number(value);
  if (!(Number.isInteger(n) && n >= 0)) fail(`--${name} must be 0 or a positive integer (got "${value}")`);
  return n;
}

function positive(name: string, raw: string, integer: boolean): number {
  const value = Number(raw);
  if (!(value > 0) || (integer && !Number.isInteger(value))) fail(`--${name} must be a positive ${integer ? 'integer' : 'number'} (got "${raw}")`);
  return value;
}

function list<T extends string>(name: string, raw: string | undefined, known: readonly T[], byDefault: readonly T[] = known): T[] {
  if (raw === undefined) return [...byDefault];
  const picked = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const p of picked) if (!known.includes(p as T)) fail(`--${name}: unknown "${p}" (known: ${known.join(', ')})`);
  return known.filter((k) => picked.includes(k));
}

const load = {
  duration: positive('duration', args.duration!, false),
  warmup: Number(args.warmup),
  connections: positive('connections', args.connections!, true),
};
if (!(load.warmup >= 0)) fail(`--warmup must be 0 or more seconds (got "${args.warmup}")`);
const roundCount = args.rounds === '0' ? 0 : positive('rounds', args.rounds!, true);
const servers =
  args.only === 'none'
    ? []
    : list(
        'only',
        args.only,
        benchServers.map((s) => s.name),
        benchServers.filter((s) => !s.optional).map((s) => s.name),
      );
const queries = benchQueries.filter((q) =>
  list(
    'queries',
    args.queries,
    benchQueries.map((b) => b.id),
  ).includes(q.id),
);
const runtimes = args.edge === 'none' ? [] : list('edge', args.edge, edgeRuntimes);
const edgeRequests = positive('edge-requests', args['edge-requests']!, true);
const edgeBatches = positive('edge-batches', args['edge-batches']!, true);
const coldRuntimes = args.cold === 'none' ? [] : list('cold', args.cold, coldStartRuntimes);
const coldSamples = positive('cold-samples', args['cold-samples']!, true);
const satSlices = sliceCount('sat-slices', args['sat-slices']!);
const cpuSlices = sliceCount('cpu-slices', args['cpu-slices']!);
const cpuSlice = positive('cpu-slice', args['cpu-slice']!, false);
const cpuRate = positive('cpu-rate', args['cpu-rate']!, true);
const subscriberCounts = args.subscribers === 'none' ? [] : args.subscribers!.split(',').map((n) => positive('subscribers', n.trim(), true));
const subEvents = positive('sub-events', args['sub-events']!, true);
const subRate = positive('sub-rate', args['sub-rate']!, true);
const subRateSeconds = positive('sub-rate-seconds', args['sub-rate-seconds']!, false);
const subWarmup = Number(args['sub-warmup']);
if (!Number.isInteger(subWarmup) || subWarmup < 0) fail(`--sub-warmup must be a whole number of bursts, 0 or more (got "${args['sub-warmup']}")`);
const log = (line: string) => {
  if (!args.json) console.log(line);
  else console.error(line);
};

const expected = expectedBodies();
const started = new Date();
log(
  `GraphQL bench, ${started.toISOString()}: ${load.connections} connections, ${load.warmup} s warm-up + ${load.duration} s per query, ` +
    `one server at a time, ${roundCount} round${roundCount > 1 ? 's' : ''}`,
);
// Rounds: every server is started, loaded and stopped once per round, in an order that rotates
// from round to round; each cell reports its median round, and its ratio to the ceiling is the
// median of the per-round ratios. On a shared machine this spreads
// background noise over all servers instead of letting it land on whichever ran at a bad moment.
const rounds: Measurement[][] = [];
for (let round = 0; round < (servers.length > 0 ? roundCount : 0); round++) {
  if (roundCount > 1) log(` round ${round + 1} of ${roundCount}`);
  const order = servers.map((_, i) => servers[(i + round) % servers.length]);
  for (const name of order) {
    const label = benchServers.find((s) => s.name === name)!.label;
    log(`  ${label}`);
    const server = await startServerProcess(name);
    try {
      for (const q of queries) {
        const note = await checkAnswer(server.port, q, expected.get(q.id)!);
        const m = await measure(name, server, q, load);
        if (note) m.note = note;
        (rounds[round] ??= []).push(m);
        log(
          `    ${q.label.padEnd(8)} ${Math.round(m.requestsPerSecond).toString().padStart(7)} req/s  p99 ${m.p99Ms} ms  ${m.cpuMicroseconds?.toFixed(0) ?? '?'} µs CPU/req${m.failures ? `  ${m.failures} FAILED` : ''}${note ? `  (${note})` : ''}`,
        );
      }
    } finally {
      await server.stop();
    }
  }
}
const measurements: Measurement[] = medianRounds(rounds);

let saturated: InterleavedMeasurement[] = [];
if (satSlices > 0 && servers.length > 0) {
  log(`All servers at once, saturating load in ${cpuSlice} s slices (${satSlices} per server and query, ${load.connections} connections): req/s`);
  saturated = await runInterleaved({
    servers,
    queries,
    slices: satSlices,
    sliceSeconds: cpuSlice,
    connections: load.connections,
    rate: () => undefined,
    log,
  });
}

let interleaved: InterleavedMeasurement[] = [];
if (cpuSlices > 0 && servers.length > 0) {
  log(`All servers at once, fixed-rate load in ${cpuSlice} s slices (${cpuSlices} per server and query): server CPU per request`);
  interleaved = await runInterleaved({
    servers,
    queries,
    slices: cpuSlices,
    sliceSeconds: cpuSlice,
    connections: 20,
    rate: (q) => (q.large ? Math.round(cpuRate / 5) : cpuRate),
    log,
  });
}

let edge: EdgeMeasurement[] = [];
if (runtimes.length > 0) {
  log(`Edge handlers in-process: ${edgeBatches} batches of ${edgeRequests} requests (Q2: ${Math.round(edgeRequests / 5)}), median batch`);
  edge = await runEdgeBench({ runtimes, batches: edgeBatches, requests: edgeRequests, log });
}

let coldStart: ColdStartMeasurement[] = [];
if (coldRuntimes.length > 0) {
  log(`Edge cold start: fresh instance to the first Q1 GET body, ${coldSamples} per bundle, rotating order`);
  coldStart = await runColdStartBench({ runtimes: coldRuntimes, samples: coldSamples, log });
}

let subscriptions: SubscriptionMeasurement[] = [];
if (subscriberCounts.length > 0) {
  log(
    `Subscriptions: chat schema, one WebSocket per subscriber on one room, bursts of ${subEvents} mutations (repeated up to 40 times ` +
      `until 200,000 deliveries) after ${subWarmup} untimed warm-up burst${subWarmup === 1 ? '' : 's'}, server CPU time; ` +
      `then ${subRate} deliveries/s for ${subRateSeconds} s, publish→receipt`,
  );
  subscriptions = await runSubscriptionBench({
    servers: subscriptionServers,
    subscribers: subscriberCounts,
    events: subEvents,
    warmupBursts: subWarmup,
    pacedRate: subRate,
    pacedSeconds: subRateSeconds,
    log,
  });
}

if (args.json) {
  console.log(
    JSON.stringify({ started: started.toISOString(), load, rounds, http: measurements, saturated, interleaved, edge, coldStart, subscriptions }, null, 2),
  );
} else {
  const labels = servers.map((n) => ({ name: n, label: benchServers.find((s) => s.name === n)!.label }));
  if (measurements.length > 0) {
    console.log('');
    console.log(httpTable(measurements, queries, labels));
  }
  if (saturated.length > 0) {
    console.log('');
    console.log(saturatedTable(saturated, queries, labels));
  }
  if (interleaved.length > 0) {
    console.log('');
    console.log(interleavedTable(interleaved, queries, labels, cpuSlice, cpuSlices));
  }
  if (edge.length > 0) {
    console.log('');
    console.log(edgeTable(edge, queries));
  }
  if (coldStart.length > 0) {
    console.log('');
    console.log(coldStartTable(coldStart));
  }
  if (subscriptions.length > 0) {
    console.log('');
    console.log(subscriptionTable(subscriptions));
  }
  const targets = targetLines(measurements, edge, interleaved, saturated, coldStart);
  if (targets.length > 0) {
    console.log('');
    for (const line of targets) console.log(line);
  }
}

/**
 * Per (server, query): the round with the median req/s (its p99 and CPU come with it), and the
 * median over rounds of the ratio to the ceiling measured in the same round.
 */
function medianRounds(all: Measurement[][]): Measurement[] {
  const cells = new Map<string, Measurement[]>();
  const ratios = new Map<string, number[]>();
  for (const round of all) {
    for (const m of round) {
      const key = `${m.server}\u0000${m.query}`;
      cells.set(key, [...(cells.get(key) ?? []), m]);
      const ceiling = round.find((c) => c.server === 'ceiling' && c.query === m.query);
      if (ceiling && ceiling.requestsPerSecond > 0) ratios.set(key, [...(ratios.get(key) ?? []), m.requestsPerSecond / ceiling.requestsPerSecond]);
    }
  }
  return [...cells].map(([key, ms]) => {
    const sorted = [...ms].sort((a, b) => a.requestsPerSecond - b.requestsPerSecond);
    const picked = { ...sorted[(sorted.length - 1) >> 1] };
    picked.failures = ms.reduce((sum, m) => sum + m.failures, 0);
    const r = ratios.get(key);
    if (r) picked.ratio = median(r);
    return picked;
  });
}
