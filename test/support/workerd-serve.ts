// workerd itself, as a deployment runs a Worker: `workerd serve` with a config that embeds the
// Worker's modules (workerd compiles every listed module at start). The listening socket is bound
// here and handed over (--socket-fd), so a request sent at once waits in the kernel's accept queue
// until workerd is ready, and no port is guessed.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer, type Server } from 'node:net';
import { join, relative } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { within } from './graphql-fixtures.ts';
import { stopChild, type RunningRuntime } from './graphql-edge.ts';

// The package is CommonJS with an esModule-style default: its `default` is the binary's path.
export const workerdBinary: string = (createRequire(import.meta.url)('workerd') as { default: string }).default;

/** wrangler.toml's compatibility date: the one every local workerd run uses. */
export async function wranglerCompatibilityDate(): Promise<string> {
  const wrangler = parseToml(await readFile(new URL('../../wrangler.toml', import.meta.url), 'utf8')) as { compatibility_date?: unknown };
  if (typeof wrangler.compatibility_date !== 'string') throw new Error('wrangler.toml has no compatibility_date');
  return wrangler.compatibility_date;
}

export interface WorkerdModules {
  /** Directory the module paths are relative to. */
  dir: string;
  /** ES modules, the main module first; their names in the Worker are these paths. */
  modules: string[];
}

/** Writes a workerd config serving `worker` on the socket named http; returns its path. */
export async function writeWorkerdConfig(workdir: string, worker: WorkerdModules, compatibilityDate: string): Promise<string> {
  await mkdir(workdir, { recursive: true });
  // capnp resolves `embed` paths relative to the config file.
  const modules = worker.modules
    .map((m) => `(name = ${JSON.stringify(m)}, esModule = embed ${JSON.stringify(relative(workdir, join(worker.dir, m)))})`)
    .join(', ');
  const config = join(workdir, 'config.capnp');
  await writeFile(
    config,
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .worker) ],
  sockets = [ (name = "http", http = (), service = "main") ],
);
const worker :Workerd.Worker = (
  modules = [ ${modules} ],
  compatibilityDate = ${JSON.stringify(compatibilityDate)},
);
`,
  );
  return config;
}

export interface ServingWorkerd {
  child: ChildProcess;
  origin: string;
  /** Rejects when workerd exits, with what it printed. */
  exited: Promise<never>;
}

function listen(): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

/**
 * Spawns `workerd serve config` on a socket bound here; requests may be sent at once. `wrapper` runs
 * workerd under another program (valgrind), which hands the socket on.
 */
export async function spawnWorkerd(config: string, wrapper: readonly string[] = []): Promise<ServingWorkerd> {
  const server = await listen();
  const { port } = server.address() as { port: number };
  const fd = (server as unknown as { _handle: { fd: number } })._handle.fd;
  const argv = [workerdBinary, 'serve', config, '--socket-fd', 'http=3'];
  const child = spawn(wrapper[0] ?? argv[0], [...wrapper.slice(1), ...(wrapper.length > 0 ? argv : argv.slice(1))], {
    stdio: ['ignore', 'ignore', 'pipe', fd],
  });
  // The child has its own copy of the socket: ours must not accept its connections.
  server.close();
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code, signal) => reject(new Error(`workerd exited (${code ?? signal}): ${stderr.slice(-2000) || 'no output'}`))),
  );
  exited.catch(() => {});
  return { child, origin: `http://127.0.0.1:${port}`, exited };
}

/** A Worker's modules under `workerd serve`, for tests. */
export async function startWorkerdServe(worker: WorkerdModules, compatibilityDate: string, workdir: string): Promise<RunningRuntime> {
  const served = await spawnWorkerd(await writeWorkerdConfig(workdir, worker, compatibilityDate));
  return {
    origin: served.origin,
    fetch: (input, init) =>
      within(
        15_000,
        `workerd serve did not answer ${init?.method ?? 'GET'} ${input}`,
        Promise.race([served.exited, fetch(new URL(input, served.origin), init)]),
      ),
    stop: () => stopChild(served.child),
  };
}
