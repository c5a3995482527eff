// Launching conmon, the per-container monitor. conmon double-forks (its monitor ends up with PPID 1),
// holds the container's stdio, writes the CRI log and the exit file, so a container and its logging
// outlive skiffd. The monitor reports `{"pid": N}` (or `{"pid": -1, "message": ...}`) on fd 3, its
// sync pipe, once `RUNTIME create` is done.
import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CreateOptions, CreateResult } from './runtime.ts';
import { OciRuntimeError } from './runtime.ts';

export interface ConmonLaunch {
  conmonPath: string;
  runtimePath: string;
  runtimeRoot: string;
  /** The runtime's global flags besides --root, passed on by conmon. */
  runtimeFlags?: readonly string[];
  conmonFlags?: readonly string[];
}

export const CONMON_PIDFILE = 'conmon-pidfile';
export const CONTAINER_PIDFILE = 'pidfile';
/**
 * The OCI runtime's own log while it creates the container. Without it the runtime writes its warnings
 * to its stderr, which is the container's stderr, and they land in the container's log.
 */
export const RUNTIME_LOG = 'runtime.log';

export function conmonArgs(launch: ConmonLaunch, o: CreateOptions): string[] {
  const args = [
    '-b',
    o.bundle,
    '-c',
    o.id,
    '-u',
    o.id,
    '-n',
    o.id,
    '--exit-dir',
    o.exitDir,
    '-l',
    `k8s-file:${o.logPath}`,
    '-P',
    join(o.bundle, CONMON_PIDFILE),
    '-p',
    join(o.bundle, CONTAINER_PIDFILE),
    '--persist-dir',
    o.persistDir,
    '-r',
    launch.runtimePath,
    '--runtime-arg',
    `--root=${launch.runtimeRoot}`,
    ...[...(launch.runtimeFlags ?? []), `--log=${join(o.bundle, RUNTIME_LOG)}`, '--log-format=json'].flatMap((flag) => ['--runtime-arg', flag]),
    ...(launch.conmonFlags ?? []),
    '--socket-dir-path',
    o.socketDir,
  ];
  if (o.tty) args.push('-t');
  if (o.stdin) {
    args.push('-i');
    if (!o.stdinOnce) args.push('--leave-stdin-open');
  }
  return args;
}

/** Spawns conmon detached from skiffd and waits for the container's init pid. */
export function createWithConmon(launch: ConmonLaunch, o: CreateOptions): Promise<CreateResult> {
  const timeoutMs = o.timeoutMs ?? 30_000;
  const child = spawn(launch.conmonPath, conmonArgs(launch, o), {
    cwd: o.bundle,
    // Own session and process group: a signal to skiffd's group never reaches the monitor.
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    env: { ...process.env, _OCI_SYNCPIPE: '3' },
  });
  child.unref();
  let diagnostics = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (diagnostics += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (diagnostics += d));
  // The first conmon exits once it has forked its monitor: a failure before that (bad flags, no such
  // program) is its exit status and what it printed.
  const launcher: Launcher = {
    failed: new Promise((resolve) => {
      child.on('error', (err) => resolve(`cannot run conmon (${launch.conmonPath}): ${err.message}`));
      child.on('exit', (code, signal) => resolve(code === 0 ? undefined : `conmon exited with ${signal ?? `status ${code}`}${said(diagnostics)}`));
    }),
    printed: () => diagnostics,
  };
  return awaitPid(launch, o, child.stdio[3] as Readable, timeoutMs, launcher).finally(() => {
    child.stdout!.destroy();
    child.stderr!.destroy();
  });
}

/** The process that started conmon: whether it failed (and why), and what conmon printed so far. */
interface Launcher {
  failed: Promise<string | undefined>;
  printed: () => string;
}

const said = (text: string) => (text.trim() ? `: ${text.trim()}` : '');

/** Reads conmon's report from its sync pipe: the container's pid, or why the runtime's create (or conmon) failed. */
function awaitPid(launch: ConmonLaunch, o: CreateOptions, syncPipe: Readable, timeoutMs: number, launcher: Launcher): Promise<CreateResult> {
  return new Promise((resolve, reject) => {
    let sync = '';
    let settled = false;
    const finish = (err: Error | undefined, result?: CreateResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // The monitor keeps the sync pipe open for the container's lifetime; let go of our end.
      syncPipe.destroy();
      if (err) reject(err);
      else resolve(result!);
    };
    const timer = setTimeout(
      () => finish(new OciRuntimeError(`conmon did not report the container pid within ${timeoutMs} ms${said(launcher.printed())}`)),
      timeoutMs,
    );
    void launcher.failed.then((why) => why && finish(new OciRuntimeError(why)));
    syncPipe.on('error', () => {});
    syncPipe.setEncoding('utf8').on('data', (chunk: string) => {
      sync += chunk;
      const line = sync.split('\n')[0];
      let message: { pid?: number; message?: string } | undefined;
      try {
        message = JSON.parse(line) as { pid?: number; message?: string };
      } catch {
        return; // not complete yet
      }
      if (typeof message.pid === 'number' && message.pid > 0) {
        const pid = message.pid;
        void Promise.all([readPid(join(o.bundle, CONMON_PIDFILE)), readRuntimeLog(o.bundle)]).then(([conmonPid, log]) =>
          finish(undefined, { pid, conmonPid, runtimeWarnings: log.warnings }),
        );
      } else {
        const reported = cleanRuntimeMessage(message.message ?? line);
        void readRuntimeLog(o.bundle).then((log) => finish(createFailed(launch, reported, log.errors, launcher.printed())));
      }
    });
    syncPipe.on('end', () => {
      if (settled) return;
      // The pipe ends when conmon does; if it failed to start, its exit says why (and comes at once).
      // conmon relays the runtime's error from the container's stderr, where a runtime with a log file writes none.
      void Promise.all([launcher.failed, readRuntimeLog(o.bundle)]).then(([why, log]) =>
        finish(
          why
            ? new OciRuntimeError(why)
            : log.errors.length > 0
              ? createFailed(launch, '', log.errors, launcher.printed())
              : new OciRuntimeError(`conmon exited before reporting the container pid${said(launcher.printed())}`),
        ),
      );
    });
  });
}

function createFailed(launch: ConmonLaunch, reported: string, logged: string[], diagnostics: string): OciRuntimeError {
  const why = [...new Set([...logged, ...(reported ? [reported] : [])])].join('; ') || 'no reason given';
  return new OciRuntimeError(`${launch.runtimePath} create failed: ${why}`, diagnostics);
}

/** The runtime's JSON log lines (logrus: level, msg), as errors and warnings; none when there is no log. */
export async function readRuntimeLog(bundle: string): Promise<{ errors: string[]; warnings: string[] }> {
  const out = { errors: [] as string[], warnings: [] as string[] };
  let text: string;
  try {
    text = await readFile(join(bundle, RUNTIME_LOG), 'utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n')) {
    let entry: { level?: unknown; msg?: unknown };
    try {
      entry = JSON.parse(line) as { level?: unknown; msg?: unknown };
    } catch {
      continue;
    }
    if (typeof entry.msg !== 'string') continue;
    if (entry.level === 'error' || entry.level === 'fatal' || entry.level === 'panic') out.errors.push(entry.msg);
    else if (entry.level === 'warning') out.warnings.push(entry.msg);
  }
  return out;
}

export async function readPid(path: string): Promise<number | undefined> {
  try {
    const n = Number.parseInt((await readFile(path, 'utf8')).trim(), 10);
    return Number.isFinite(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

/** runc reports `time="..." level=error msg="..."`; keep the msg parts. */
export function cleanRuntimeMessage(text: string): string {
  const msgs = [...text.matchAll(/msg="((?:[^"\\]|\\.)*)"/g)].map((m) => m[1].replace(/\\"/g, '"'));
  return (msgs.length > 0 ? msgs.join('; ') : text).trim();
}
