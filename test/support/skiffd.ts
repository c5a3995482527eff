// Test harness: runs skiffd as a real child process on a private socket with private --root and
// --state dirs, and hands back nice-grpc clients for both CRI services. Every wait is bounded and
// everything it starts is stopped and removed by cleanup() (and killed at worst on process exit).
//
//   const d = await startSkiffd({ config: '[runtime]\ncgroup_driver = "systemd"\n' });
//   t.after(() => d.cleanup());
//   await d.runtime.version({});
//
// By default the daemon runs from source (node --import tsx node/skiffd/main.ts). Set `command`, or
// the SKIFFD_BIN environment variable (e.g. `dist/skiffd` or `dist/skiffd.cjs`), to test a build.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createChannel, createClient, type Channel, type Client } from 'nice-grpc';
import { ImageServiceDefinition, RuntimeServiceDefinition } from '../../proto/gen/runtime/v1/api.ts';
import { scaled } from './time-scale.ts';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

export type RuntimeClient = Client<typeof RuntimeServiceDefinition>;
export type ImageClient = Client<typeof ImageServiceDefinition>;

export interface SkiffdOptions {
  /**
   * TOML for --config (written to <dir>/config.toml, so the host's /etc/skiffd is never read). Unless it
   * has a [cni] table, `[cni] conf_dir = "<dir>/cni"` is added: tests never touch /etc/cni/net.d.
   */
  config?: string;
  /** Extra command-line arguments, after the harness's own (so they win). */
  args?: string[];
  /** Extra environment for the daemon. */
  env?: Record<string, string>;
  /** argv prefix that runs skiffd; default: SKIFFD_BIN if set, else the sources through tsx. */
  command?: string[];
  cwd?: string;
  /** Use this directory instead of a fresh temp dir (e.g. to restart on the same --root/--state); it is not removed by cleanup. */
  dir?: string;
  /** Default `<dir>/skiffd.sock`. */
  socket?: string;
  /** Bounded wait for the "serving" log line. */
  startTimeoutMs?: number;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface SkiffdHandle {
  dir: string;
  socket: string;
  root: string;
  state: string;
  configFile: string;
  child: ChildProcess;
  channel: Channel;
  runtime: RuntimeClient;
  images: ImageClient;
  /** Everything the daemon wrote to stderr so far (its log). */
  logs(): string;
  stdout(): string;
  /** Resolves when the process exits. */
  exited: Promise<Exit>;
  /** Signals the daemon and waits (bounded) for it to exit; SIGKILL and an error if it does not. */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<Exit>;
  /** Stops the daemon if running, closes the channel, removes the temp dir. Safe to call twice. */
  cleanup(): Promise<void>;
}

const live = new Set<ChildProcess>();
/** Daemons started in a directory their caller owns, by directory. */
const inDir = new Map<string, Set<SkiffdHandle>>();

/**
 * Stops every skiffd still running in `dir`, then removes it. A test's after-hook uses this rather than
 * removing the directory under a running daemon: that fails (its mounts are busy), and a failing hook
 * skips the hooks after it, so the daemon would be left running and the test file would never end.
 */
export async function removeDaemonDir(dir: string): Promise<void> {
  const stopped = await Promise.allSettled([...(inDir.get(dir) ?? [])].map((d) => d.cleanup()));
  inDir.delete(dir);
  rmSync(dir, { recursive: true, force: true });
  for (const r of stopped) if (r.status === 'rejected') throw r.reason;
}
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** The argv prefix that runs skiffd for tests. */
export function skiffdCommand(): string[] {
  const bin = process.env.SKIFFD_BIN;
  if (bin) return bin.endsWith('.cjs') || bin.endsWith('.js') ? [process.execPath, bin] : [bin];
  return [process.execPath, '--import', import.meta.resolve('tsx'), join(repoRoot, 'node', 'skiffd', 'main.ts')];
}

function spawnSkiffd(argv: string[], options: { command?: string[]; env?: Record<string, string>; cwd?: string }) {
  const [cmd, ...prefix] = options.command ?? skiffdCommand();
  const child = spawn(cmd, [...prefix, ...argv], {
    cwd: options.cwd ?? repoRoot,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<Exit>((resolve) => {
    child.once('exit', (code, signal) => {
      live.delete(child);
      // Let the pipes drain so the last log lines are visible.
      setImmediate(() => resolve({ code, signal }));
    });
    child.once('error', (err) => {
      live.delete(child);
      stderr += `\n[harness] spawn failed: ${err.message}\n`;
      resolve({ code: -1, signal: null });
    });
  });
  return { child, exited, stdout: () => stdout, stderr: () => stderr };
}

function timeout<T>(ms: number, value: T): { promise: Promise<T>; cancel(): void } {
  let timer: NodeJS.Timeout;
  const promise = new Promise<T>((resolve) => (timer = setTimeout(resolve, ms, value)));
  return { promise, cancel: () => clearTimeout(timer) };
}

/**
 * The caller's TOML plus a private CNI config dir (unless it sets [cni] itself), a private registry
 * hosts dir (unless it sets config_path) and private NRI paths (unless it sets [nri]), so a test daemon
 * never reads the host's /etc/cni/net.d, /etc/skiffd/certs.d or NRI plugins, nor takes its NRI socket.
 */
export function hermeticConfig(toml: string, dir: string): string {
  let out = toml;
  // NRI's socket and plugin directories of its own: never the node's /var/run/nri or /opt/nri.
  if (!/^\s*\[nri\]/m.test(out)) {
    out += `\n[nri]\nsocket_path = ${JSON.stringify(join(dir, 'nri', 'nri.sock'))}\nplugin_path = ${JSON.stringify(join(dir, 'nri', 'plugins'))}\nplugin_config_path = ${JSON.stringify(join(dir, 'nri', 'conf.d'))}\n`;
  }
  if (!/^\s*config_path\s*=/m.test(out) && !/^\s*\[registry\]/m.test(out)) out += `\n[registry]\nconfig_path = ${JSON.stringify(join(dir, 'certs.d'))}\n`;
  if (/^\s*\[cni\]/m.test(toml) || /^\s*cni\./m.test(toml)) return out;
  return `${out}\n[cni]\nconf_dir = ${JSON.stringify(join(dir, 'cni'))}\n`;
}

/** Runs skiffd to completion (for --help, --version, bad config...), bounded. */
export async function runSkiffd(
  argv: string[],
  options: { command?: string[]; env?: Record<string, string>; cwd?: string; timeoutMs?: number } = {},
): Promise<Exit & { stdout: string; stderr: string }> {
  const run = spawnSkiffd(argv, options);
  const limit = timeout(options.timeoutMs ?? 20_000, 'timeout' as const);
  const result = await Promise.race([run.exited, limit.promise]);
  limit.cancel();
  if (result === 'timeout') {
    run.child.kill('SIGKILL');
    await run.exited;
    throw new Error(`skiffd ${argv.join(' ')} did not exit within ${options.timeoutMs ?? 20_000} ms\nstderr:\n${run.stderr()}`);
  }
  return { ...result, stdout: run.stdout(), stderr: run.stderr() };
}

/** Starts skiffd and waits until it serves. Rejects (with the daemon's log) if it exits or times out first. */
export async function startSkiffd(options: SkiffdOptions = {}): Promise<SkiffdHandle> {
  const ownDir = options.dir === undefined;
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'skiffd-'));
  // Passable (not listable) by others, as /var/lib and /run are: containers in a pod's user namespace
  // reach their rootfs as an unprivileged host ID (mkdtemp makes 0700 directories).
  if (ownDir) chmodSync(dir, 0o711);
  const socket = options.socket ?? join(dir, 'skiffd.sock');
  const root = join(dir, 'root');
  const state = join(dir, 'state');
  const configFile = join(dir, 'config.toml');
  writeFileSync(configFile, hermeticConfig(options.config ?? '', dir));
  const argv = ['--config', configFile, '--listen', `unix://${socket}`, '--root', root, '--state', state, ...(options.args ?? [])];
  let run = spawnSkiffd(argv, options);
  const startTimeoutMs = scaled(options.startTimeoutMs ?? 30_000);
  let ready = await waitForServing(run, startTimeoutMs);
  if (ready === 'timeout' && !/ msg=starting |"msg":"starting"/.test(run.stderr())) {
    // Not one line in the whole wait: the process never reached skiffd's code (Node or the TypeScript
    // loader stuck before it). That is no finding about skiffd, so it gets one more start; the stuck
    // one is reported, and a daemon that starts and then hangs fails below as before.
    console.error(`skiffd never ran within ${startTimeoutMs} ms; starting it again. The stuck process:\n${processReport(run.child.pid)}`);
    run.child.kill('SIGKILL');
    await run.exited;
    run = spawnSkiffd(argv, options);
    ready = await waitForServing(run, startTimeoutMs);
  }

  if (ready !== 'ready') {
    // A start that hangs says where: the state of each of its threads and its children, taken before the kill.
    const stuck = ready === 'timeout' ? processReport(run.child.pid) : '';
    if (ready === 'timeout') run.child.kill('SIGKILL');
    const exit = await run.exited;
    if (ownDir) rmSync(dir, { recursive: true, force: true });
    throw new Error(
      `skiffd did not start (${ready === 'timeout' ? `no "serving" line within ${startTimeoutMs} ms` : `exited with code ${exit.code} signal ${exit.signal}`})\n` +
        `command: ${[...(options.command ?? skiffdCommand()), ...argv].join(' ')}\nstderr:\n${run.stderr()}` +
        (stuck ? `\nprocess when it was killed:\n${stuck}` : ''),
    );
  }

  const channel = createChannel(`unix://${socket}`);
  const runtime = createClient(RuntimeServiceDefinition, channel);
  const images = createClient(ImageServiceDefinition, channel);

  const stop = async (signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 20_000): Promise<Exit> => {
    if (run.child.exitCode !== null || run.child.signalCode !== null) return run.exited;
    run.child.kill(signal);
    const limit = timeout(timeoutMs, 'timeout' as const);
    const result = await Promise.race([run.exited, limit.promise]);
    limit.cancel();
    if (result === 'timeout') {
      run.child.kill('SIGKILL');
      await run.exited;
      throw new Error(`skiffd did not exit within ${timeoutMs} ms of ${signal}; killed it\nstderr:\n${run.stderr()}`);
    }
    return result;
  };

  let cleaned = false;
  const cleanup = async () => {
    if (cleaned) return;
    cleaned = true;
    inDir.get(dir)?.delete(handle);
    channel.close();
    try {
      await stop('SIGTERM');
    } finally {
      // Containers a failed test left running may hold skiffd's output pipes (through conmon): they must
      // not keep this process alive until the test file's timeout.
      run.child.stdout?.destroy();
      run.child.stderr?.destroy();
      if (ownDir) rmSync(dir, { recursive: true, force: true });
    }
  };

  const handle: SkiffdHandle = {
    dir,
    socket,
    root,
    state,
    configFile,
    child: run.child,
    channel,
    runtime,
    images,
    logs: run.stderr,
    stdout: run.stdout,
    exited: run.exited,
    stop,
    cleanup,
  };
  if (!ownDir) inDir.set(dir, (inDir.get(dir) ?? new Set()).add(handle));
  return handle;
}

/**
 * What a process and its descendants are doing, from /proc: per thread its name, state and the kernel
 * function it waits in, and per child its command line. Best effort; empty where /proc says nothing.
 */
function processReport(pid: number | undefined, depth = 0): string {
  if (pid === undefined || depth > 3) return '';
  const read = (path: string) => {
    try {
      return readFileSync(path, 'utf8');
    } catch {
      return '';
    }
  };
  const indent = '  '.repeat(depth);
  const lines = [`${indent}pid ${pid}: ${read(`/proc/${pid}/cmdline`).split('\0').join(' ').trim().slice(0, 200)}`];
  let tasks: string[] = [];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return lines.join('\n');
  }
  for (const tid of tasks) {
    const stat = read(`/proc/${pid}/task/${tid}/stat`);
    const name = /\((.*)\)/.exec(stat)?.[1] ?? '?';
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] ?? '?';
    lines.push(`${indent}  thread ${tid} (${name}) state ${state} wchan ${read(`/proc/${pid}/task/${tid}/wchan`) || '?'}`);
    for (const child of read(`/proc/${pid}/task/${tid}/children`).split(' ').filter(Boolean)) {
      lines.push(processReport(Number(child), depth + 1));
    }
  }
  return lines.join('\n');
}

/** Waits until the daemon logs that it serves, exits, or the time is up. */
function waitForServing(run: ReturnType<typeof spawnSkiffd>, startTimeoutMs: number): Promise<'ready' | 'exited' | 'timeout'> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => finish('timeout'), startTimeoutMs);
    const onData = () => {
      if (/ msg=serving |"msg":"serving"/.test(run.stderr())) finish('ready');
    };
    const finish = (why: 'ready' | 'exited' | 'timeout') => {
      clearTimeout(timer);
      run.child.stderr!.off('data', onData);
      resolve(why);
    };
    run.child.stderr!.on('data', onData);
    run.exited.then(() => finish('exited'));
    onData();
  });
}
