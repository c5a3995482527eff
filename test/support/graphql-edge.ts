// Runs a built edge bundle on a real runtime and exposes it as a fetch function, with every wait bounded.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { within } from './graphql-fixtures.ts';

export type FetchFn = (input: string, init?: RequestInit) => Promise<Response>;

export interface RunningRuntime {
  /** Base URL to send requests to (paths are appended). */
  origin: string;
  fetch: FetchFn;
  stop(): Promise<void>;
}

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
export const denoBinary = join(repoRoot, 'node_modules', '.bin', 'deno');

/**
 * `deno serve --port 0 ...serveArgs` (permission flags, then the module), the way Deno Deploy runs a
 * module with a default `{ fetch }` export. Only the flags given are granted.
 */
export async function startDeno(serveArgs: string[], options: { cwd?: string; startupMs?: number; run?: boolean } = {}): Promise<RunningRuntime> {
  const startupMs = options.startupMs ?? 20_000;
  const denoDir = await mkdtemp(join(tmpdir(), 'skiff-deno-'));
  // `run`: `deno run` on an entry that starts its own server on PORT/HOST (as Deno Deploy runs it).
  const argv = options.run ? ['run', ...serveArgs] : ['serve', '--port', '0', '--host', '127.0.0.1', ...serveArgs];
  const child = spawn(denoBinary, argv, {
    cwd: options.cwd ?? repoRoot,
    env: {
      ...process.env,
      DENO_DIR: denoDir,
      DENO_NO_UPDATE_CHECK: '1',
      DENO_NO_PROMPT: '1',
      NO_COLOR: '1',
      ...(options.run ? { PORT: '0', HOST: '127.0.0.1' } : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const listening = new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /Listening on (http:\/\/[^\s/]+)\//.exec(output);
      if (match) resolve(match[1]);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('error', reject);
    child.once('exit', (code, signal) => reject(new Error(`deno ${argv[0]} exited (${code ?? signal}) before listening:\n${output}`)));
  });
  const stop = async () => {
    await stopChild(child);
    await rm(denoDir, { recursive: true, force: true });
  };
  try {
    const origin = await within(startupMs, `deno ${argv[0]} did not start listening; output so far:\n${output}`, listening);
    return { origin, fetch: bounded('deno', (input, init) => fetch(new URL(input, origin), init)), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

export const bunBinary = join(repoRoot, 'node_modules', '.bin', 'bun');

/** `bun --port 0 module`: Bun serves the module's default export (Bun.serve options), as in production. */
export async function startBun(module: string, startupMs = 20_000): Promise<RunningRuntime> {
  const child = spawn(bunBinary, ['--port', '0', module], {
    cwd: dirname(module),
    env: { ...process.env, NODE_ENV: 'production', NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const listening = new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /Started (?:development )?server: (http:\/\/[^\s/]+)/.exec(output);
      if (match) resolve(match[1].replace('localhost', '127.0.0.1'));
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('error', reject);
    child.once('exit', (code, signal) => reject(new Error(`bun exited (${code ?? signal}) before listening:\n${output}`)));
  });
  const stop = () => stopChild(child);
  try {
    const origin = await within(startupMs, `bun did not start listening; output so far:\n${output}`, listening);
    return { origin, fetch: bounded('bun', (input, init) => fetch(new URL(input, origin), init)), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** workerd through Miniflare, loading the bundle as a module worker. */
/** For Miniflare given an entry's path: the chunks it imports are ES modules too (Miniflare takes other .js files for CommonJS). */
export const chunkModuleRules = [{ type: 'ESModule' as const, include: ['**/*.js'] }];

export async function startWorkerd(bundle: string, compatibilityDate: string, startupMs = 30_000): Promise<RunningRuntime> {
  const { Miniflare } = await import('miniflare');
  // modulesRoot: workerd refuses module paths outside it, and it defaults to the working directory.
  const mf = new Miniflare({
    modules: true,
    scriptPath: bundle,
    modulesRoot: dirname(bundle),
    modulesRules: chunkModuleRules,
    compatibilityDate,
  });
  const origin = 'http://localhost';
  try {
    await within(startupMs, 'workerd (Miniflare) did not become ready', mf.ready);
  } catch (error) {
    await mf.dispose().catch(() => {});
    throw error;
  }
  return {
    origin,
    // Miniflare's Response is undici's; re-wrap it so callers get this process's Response.
    fetch: bounded('workerd', async (input, init) => {
      const res = await mf.dispatchFetch(new URL(input, origin).toString(), init as never);
      const body = await res.arrayBuffer();
      return new Response(body, { status: res.status, headers: Object.fromEntries(res.headers.entries()) });
    }),
    stop: () => within(15_000, 'Miniflare did not shut down', mf.dispose()),
  };
}

/** Vercel's edge-runtime VM evaluating the IIFE script and dispatching `fetch` events to it. */
export async function startEdgeRuntime(script: string): Promise<RunningRuntime> {
  const { EdgeRuntime } = await import('edge-runtime');
  const runtime = new EdgeRuntime({ initialCode: await readFile(script, 'utf8') });
  const origin = 'http://localhost';
  return {
    origin,
    fetch: bounded('edge-runtime', async (input, init) => {
      const res = await runtime.dispatchFetch(new URL(input, origin).toString(), init as never);
      await res.waitUntil();
      const body = await res.arrayBuffer();
      return new Response(body, { status: res.status, headers: Object.fromEntries(res.headers.entries()) });
    }),
    stop: async () => {},
  };
}

/** Every request gets a deadline, so a runtime that stops answering fails the test instead of hanging it. */
function bounded(runtime: string, fetchFn: FetchFn, ms = 15_000): FetchFn {
  return (input, init) => within(ms, `${runtime} did not answer ${init?.method ?? 'GET'} ${input}`, fetchFn(input, init));
}

/** SIGTERM, then SIGKILL after 5 s; resolves once the child has exited. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}
