// What hibernation saves a Durable Object holding idle graphql-ws subscribers: `npx tsx
// bench/graphql/durable-object-billing.ts [--subscribers N] [--events E]`.
//
// Cloudflare bills a Durable Object's duration (GB-s, at 128 MB) while it is in memory: while it runs,
// and while it idles without being able to hibernate. With accept() an object holding sockets cannot
// hibernate (and its keep-alive timer keeps it busy): it is billed all the time. With the Hibernation API
// it is in memory from the event that wakes it until 10 s after its last event (Cloudflare's documented
// idle time before hibernation, which workerd applies locally too).
//
// Measured here, in workerd (Miniflare), with N real graphql-ws subscribers on one room: per event, the
// time from the mutation's POST to the last subscriber's receipt (the object's wake-up, restore of
// every subscription, and fan-out, as seen from outside), and whether a new instance was constructed
// for it (the object had really been evicted). Not measured: how long the object stays in memory after
// an event; workerd gives no outside view of the eviction, so the 10 s is taken from Cloudflare's
// documentation. The table's time in memory for one event a minute is then, per minute: accept() 60 s;
// hibernation 10 s plus the measured wake-to-delivered time. Events are sent 12 s apart (so the object
// is evicted before each), not a minute: the model scales the idle minute, which costs nothing asleep.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as esbuild from 'esbuild';
import WebSocket from 'ws';
import { edgeBuildOptions } from '../../scripts/build-edge.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const IDLE_BEFORE_HIBERNATION_S = 10;
const GAP_MS = 12_000;
const MB = 128;

const { values } = parseArgs({ options: { subscribers: { type: 'string', default: '100' }, events: { type: 'string', default: '3' } } });
const subscribers = Number(values.subscribers);
const events = Number(values.events);

async function bundle(dir: string): Promise<string> {
  const outfile = join(dir, 'worker.js');
  await esbuild.build({ ...edgeBuildOptions, entryPoints: [join(root, 'bench/graphql/durable-object-entry.ts')], outfile, format: 'esm', logLevel: 'silent' });
  return readFile(outfile, 'utf8');
}

function deadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
    }),
  ]);
}

/** A graphql-ws subscriber on room "bench" that resolves `waitFor(text)` when that message arrives. */
async function subscriber(ws: string): Promise<{ waitFor(text: string): Promise<void>; close(): void }> {
  const socket = new WebSocket(ws, 'graphql-transport-ws');
  const waiting = new Map<string, () => void>();
  const seen = new Set<string>();
  socket.on('message', (data) => {
    const message = JSON.parse(String(data)) as { type: string; payload?: { data?: { messageAdded?: { text: string } } } };
    if (message.type === 'ping') socket.send('{"type":"pong"}');
    const text = message.payload?.data?.messageAdded?.text;
    if (text !== undefined) {
      seen.add(text);
      waiting.get(text)?.();
    }
  });
  await deadline(new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject)), 20_000, 'a socket to open');
  const acked = new Promise<void>((resolve) => socket.on('message', (data) => String(data).includes('connection_ack') && resolve()));
  socket.send('{"type":"connection_init"}');
  await deadline(acked, 20_000, 'connection_ack');
  socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'subscription { messageAdded(room: "bench") { text } }' } }));
  return {
    waitFor: (text) => (seen.has(text) ? Promise.resolve() : new Promise((resolve) => waiting.set(text, resolve))),
    close: () => socket.terminate(),
  };
}

async function run(className: string, script: string) {
  const { Miniflare } = await import('miniflare');
  const mf = new Miniflare({
    modules: true,
    script,
    durableObjects: { SUBSCRIPTIONS: className },
    host: '127.0.0.1',
    port: 0,
    compatibilityDate: '2025-01-01',
  });
  const origin = (await mf.ready).origin;
  const instances = async () => ((await (await fetch(`${origin}/_bench/instances`)).json()) as { instances: number }).instances;
  const post = (text: string) =>
    fetch(`${origin}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: `mutation { postMessage(room: "bench", author: "bench", text: ${JSON.stringify(text)}) { id } }` }),
    }).then((response) => response.text());
  const clients = [];
  try {
    for (let i = 0; i < subscribers; i++) clients.push(await subscriber(`${origin.replace(/^http/, 'ws')}/graphql`));
    // Until every subscriber listens.
    for (let attempt = 0; ; attempt++) {
      const text = `warm-up ${attempt}`;
      await post(text);
      const all = await deadline(Promise.all(clients.map((c) => c.waitFor(text))), 2000, 'warm-up').then(
        () => true,
        () => false,
      );
      if (all) break;
      if (attempt > 20) throw new Error('the subscribers never all listened');
    }
    const wakes: number[] = [];
    let fresh = 0;
    for (let e = 0; e < events; e++) {
      await new Promise((resolve) => setTimeout(resolve, GAP_MS));
      const before = await instances();
      const text = `event ${e}`;
      const started = performance.now();
      await post(text);
      await deadline(Promise.all(clients.map((c) => c.waitFor(text))), 30_000, `"${text}" at every subscriber`);
      wakes.push(performance.now() - started);
      if ((await instances()) > before) fresh++;
    }
    wakes.sort((a, b) => a - b);
    return { wakeMs: wakes[Math.floor(wakes.length / 2)], fresh };
  } finally {
    for (const client of clients) client.close();
    await mf.dispose();
  }
}

const dir = await mkdtemp(join(tmpdir(), 'skiff-do-billing-'));
try {
  const script = await bundle(dir);
  const rows: string[] = [];
  for (const [mode, className] of [
    ['accept()', 'AcceptingSubscriptions'],
    ['hibernation', 'HibernatingSubscriptions'],
  ] as const) {
    const { wakeMs, fresh } = await run(className, script);
    const hibernates = mode === 'hibernation';
    const inMemoryPerMinute = hibernates ? IDLE_BEFORE_HIBERNATION_S + wakeMs / 1000 : 60;
    const gbSecondsPerMonth = (inMemoryPerMinute * 60 * 24 * 30 * MB) / 1024;
    rows.push(
      `| ${mode} | ${subscribers} | ${fresh} of ${events} | ${wakeMs.toFixed(0)} ms | ${inMemoryPerMinute.toFixed(1)} s | ${Math.round(gbSecondsPerMonth).toLocaleString('en-US')} |`,
    );
  }
  console.log(
    `| sockets | idle subscribers | events on a fresh instance | POST to last receipt (median) | in memory per minute (one event a minute) | GB-s per 30 days |`,
  );
  console.log('| --- | --- | --- | --- | --- | --- |');
  for (const row of rows) console.log(row);
} finally {
  await rm(dir, { recursive: true, force: true });
}
