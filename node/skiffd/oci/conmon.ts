// Launching conmon, the per-container monitor. conmon double-forks (its monitor ends up with PPID 1),
// holds the container's stdio, writes the CRI log and the exit file, so a container and its logging
// outlive skiffd. The handshake: conmon reads one byte on fd 4 (start pipe) before running
// `RUNTIME create`, then reports `{"pid": N}` (or `{"pid": -1, "message": ...}`) on fd 3 (sync pipe).
import { spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
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
    ...(launch.runtimeFlags ?? []).flatMap((flag) => ['--runtime-arg', flag]),
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
  return new Promise((resolve, reject) => {
    const child = spawn(launch.conmonPath, conmonArgs(launch, o), {
      cwd: o.bundle,
      // Own session and process group: a signal to skiffd's group never reaches the monitor.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'],
      env: { ...process.env, _OCI_SYNCPIPE: '3', _OCI_STARTPIPE: '4' },
    });
    child.unref();
    const syncPipe = child.stdio[3] as Readable;
    const startPipe = child.stdio[4] as Writable;
    let diagnostics = '';
    let sync = '';
    let settled = false;
    const finish = (err: Error | undefined, result?: CreateResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // The monitor keeps the sync pipe open for the container's lifetime; let go of our end.
      syncPipe.destroy();
      child.stdout!.destroy();
      child.stderr!.destroy();
      if (err) reject(err);
      else resolve(result!);
    };
    const timer = setTimeout(() => {
      finish(new OciRuntimeError(`conmon did not report the container pid within ${timeoutMs} ms${diagnostics ? `: ${diagnostics.trim()}` : ''}`));
    }, timeoutMs);
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (diagnostics += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (diagnostics += d));
    child.on('error', (err) => finish(new OciRuntimeError(`cannot run conmon (${launch.conmonPath}): ${err.message}`)));
    startPipe.on('error', () => {});
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
        void readPid(join(o.bundle, CONMON_PIDFILE)).then((conmonPid) => finish(undefined, { pid: message!.pid!, conmonPid }));
      } else {
        finish(new OciRuntimeError(`${launch.runtimePath} create failed: ${cleanRuntimeMessage(message.message ?? line)}`, diagnostics));
      }
    });
    syncPipe.on('end', () => {
      if (!settled) finish(new OciRuntimeError(`conmon exited before reporting the container pid${diagnostics ? `: ${diagnostics.trim()}` : ''}`));
    });
    startPipe.end(Buffer.from([0]));
  });
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
