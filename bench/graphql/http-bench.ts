// Loads one server at a time over HTTP with autocannon. Each server runs in its own process
// (server-process.ts) so the runner and autocannon never share its event loop or heap.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import autocannon from 'autocannon';
import { getPath, postBody, type BenchQuery } from './queries.ts';
import { stopChild } from '../../test/support/graphql-edge.ts';
import { ratio } from './figures.ts';

const serverProcess = fileURLToPath(new URL('./server-process.ts', import.meta.url));
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

export interface LoadOptions {
  connections: number;
  /** Seconds of measured load per query. */
  duration: number;
  /** Seconds of unmeasured load per query before it (JIT warm-up, graphql-jit compilation, caches). */
  warmup: number;
}

export interface Measurement {
  server: string;
  query: BenchQuery['id'];
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /**
   * The server process's CPU time (user + system) per request during the measured load, in µs:
   * steadier than req/s on a shared machine, since it does not count time spent waiting for a core.
   */
  cpuMicroseconds?: number;
  /** req/s as a fraction of the ceiling's (the median of per-round ratios when there are rounds). */
  ratio?: number;
  /** Requests answered with a non-2xx status or failed at the socket (should be 0). */
  failures: number;
  /** Set when the server's answer differs from graphql-js's (by bytes, or even by value). */
  note?: string;
}

export interface StartedServer {
  port: number;
  pid: number;
  /** The chat servers' publish times ([seq, monotonic ms]) recorded since the last call. */
  publishTimes(timeoutMs?: number): Promise<Array<[number, number]>>;
  /** CPU seconds (user + system, all threads) the server has used so far, to the microsecond. */
  cpuSeconds(timeoutMs?: number): Promise<number>;
  /**
   * The JavaScript heap in use plus memory held outside it (Buffers, native objects), in bytes, after
   * a full garbage collection; NaN unless the server runs with --expose-gc.
   */
  liveBytes(timeoutMs?: number): Promise<number>;
  stop(): Promise<void>;
}

/**
 * The servers whose process resolves `graphql` to the graphql 16 install, whichever graphql the
 * repository has: Mercurius with graphql-jit runs on 16 only; skiff-graphql16 is skiff on it.
 */
export const onGraphQL16Only: ReadonlySet<string> = new Set(['mercurius', 'chat-mercurius', 'skiff-graphql16']);
const graphql16Hooks = fileURLToPath(new URL('./graphql16-hooks.mjs', import.meta.url));

/** Starts `name` in a child process (run with `nodeFlags`) and waits (bounded) for it to listen. */
export async function startServerProcess(name: string, startupMs = 60_000, nodeFlags: readonly string[] = []): Promise<StartedServer> {
  const graphql16 = onGraphQL16Only.has(name) ? ['--import', graphql16Hooks] : [];
  // tsx's ESM loader only: its CommonJS hook would load a second copy of graphql for a CommonJS library.
  const child = spawn(process.execPath, [...nodeFlags, ...graphql16, '--import', 'tsx/esm', serverProcess, name], {
    cwd: repoRoot,
    // Every server runs as it would in production (Apollo and yoga read NODE_ENV).
    env: { ...process.env, NODE_ENV: 'production' },
    stdio: ['pipe', 'pipe', 'inherit', 'ipc'],
  });
  let output = '';
  const ready = new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /READY (\d+)/.exec(output);
      if (match) resolve(Number(match[1]));
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => reject(new Error(`bench server ${name} exited (${code ?? signal}) before listening`)));
  });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`bench server ${name} did not listen within ${startupMs} ms`)), startupMs);
  });
  try {
    const port = await Promise.race([ready, timeout]);
    return {
      port,
      pid: child.pid!,
      publishTimes: (ms = 10_000) => ask(child, name, 'publish-times', 'publishTimes', ms),
      cpuSeconds: async (ms = 10_000) => {
        const usage = await ask<NodeJS.CpuUsage>(child, name, 'cpu-usage', 'cpuUsage', ms);
        return (usage.user + usage.system) / 1e6;
      },
      liveBytes: (ms = 30_000) => ask<number>(child, name, 'live-bytes', 'liveBytes', ms),
      stop: () => stopChild(child),
    };
  } catch (error) {
    await stopChild(child);
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** Sends `request` to the server process and waits (bounded) for the answer carrying `key`. */
function ask<T>(child: ChildProcess, name: string, request: string, key: string, timeoutMs: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.off('message', onMessage);
      reject(new Error(`bench server ${name} did not answer ${request} within ${timeoutMs} ms`));
    }, timeoutMs);
    const onMessage = (message: unknown) => {
      if (typeof message !== 'object' || message === null || !(key in message)) return;
      clearTimeout(timer);
      child.off('message', onMessage);
      resolve((message as Record<string, T>)[key]);
    };
    child.on('message', onMessage);
    child.send(request);
  });
}

const acceptJson = 'application/json';

interface RequestOptions {
  url: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
}

function requestOptions(port: number, q: BenchQuery): RequestOptions {
  const origin = `http://127.0.0.1:${port}`;
  return q.method === 'GET'
    ? { url: origin + getPath('/graphql', q.query), method: 'GET', headers: { accept: acceptJson } }
    : {
        url: `${origin}/graphql`,
        method: 'POST',
        headers: { accept: acceptJson, 'content-type': 'application/json' },
        body: postBody(q),
      };
}

/** One request, compared with graphql-js's bytes: returns a note when it differs, throws when it fails. */
export async function checkAnswer(port: number, q: BenchQuery, expected: string): Promise<string | undefined> {
  const { url, method, headers, body } = requestOptions(port, q);
  const response = await fetch(url, { method, headers, body, signal: AbortSignal.timeout(15_000) });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`${q.label} answered ${response.status}: ${text.slice(0, 200)}`);
  if (text === expected) return undefined;
  if (text.trim() === expected) return 'same JSON plus a trailing newline';
  if (isDeepStrictEqual(JSON.parse(text), JSON.parse(expected))) return 'same values, different key order';
  throw new Error(`${q.label} answered different data: ${text.slice(0, 200)}`);
}

function load(port: number, q: BenchQuery, connections: number, seconds: number, rate?: number): Promise<autocannon.Result> {
  return autocannon({ ...requestOptions(port, q), connections, duration: seconds, ...(rate ? { overallRate: rate } : {}) });
}

/** Warm-up then measured load for one query against a running server. */
export async function measure(server: string, running: StartedServer, q: BenchQuery, options: LoadOptions): Promise<Measurement> {
  const { port } = running;
  if (options.warmup > 0) await load(port, q, options.connections, options.warmup);
  const cpuBefore = await running.cpuSeconds();
  const result = await load(port, q, options.connections, options.duration);
  const cpuAfter = await running.cpuSeconds();
  return {
    server,
    query: q.id,
    requestsPerSecond: result.requests.total / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    cpuMicroseconds: ratio((cpuAfter - cpuBefore) * 1e6, result.requests.total),
    failures: result.non2xx + result.errors + result.timeouts,
  };
}

/**
 * One slice of fixed-rate load: the requests answered and the server CPU seconds they took.
 * Used by the interleaved comparison (interleaved-bench.ts).
 */
export async function loadSlice(
  running: StartedServer,
  q: BenchQuery,
  options: { connections: number; seconds: number; rate: number | undefined },
): Promise<{ requests: number; cpuSeconds: number; failures: number }> {
  const before = await running.cpuSeconds();
  const result = await load(running.port, q, options.connections, options.seconds, options.rate);
  const after = await running.cpuSeconds();
  return {
    requests: result.requests.total,
    cpuSeconds: after - before,
    failures: result.non2xx + result.errors + result.timeouts,
  };
}
