// Exec: `runc exec` into the running container. Without a TTY the command's stdio are pipes. With a
// TTY, runc needs a terminal as its own stdin (it copies between that terminal and the pty it makes
// inside the container, and forwards SIGWINCH); util-linux `script` provides one. A resize sets the
// size of script's pty with stty, and the kernel's SIGWINCH makes runc pass it into the container.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { constants as osConstants } from 'node:os';
import type { ExecStreamRequest } from '../requests.ts';
import type { RemoteCommandIO, TerminalSize } from '../remotecommand.ts';
import type { ExecTarget } from './targets.ts';
import { execPidSignallable } from '../../oci/exec-pid.ts';
import { execProcess, writeProcessFile } from '../../oci/exec-process.ts';
import { killGroup } from '../../util/kill-group.ts';

/** How long a TTY exec waits for the client's terminal size before starting with 80x24. */
const INITIAL_SIZE_WAIT_MS = 1_000;
const DEFAULT_SIZE: TerminalSize = { width: 80, height: 24 };

function firstSize(io: RemoteCommandIO, waitMs: number): Promise<TerminalSize> {
  if (io.resize.last) return Promise.resolve(io.resize.last);
  if (!io.resize.enabled) return Promise.resolve(DEFAULT_SIZE);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(DEFAULT_SIZE), waitMs);
    io.resize.subscribe((size) => {
      clearTimeout(timer);
      resolve(size);
    });
  });
}

function shellQuote(arg: string): string {
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

export async function execInContainer(target: ExecTarget, request: ExecStreamRequest, io: RemoteCommandIO): Promise<number> {
  if (request.cmd.length === 0) throw new Error('exec: no command given');
  if (!target.process) throw new Error(`exec: container ${target.id.slice(0, 12)} has no readable config.json in its bundle`);
  // Every file in the runtime's root-only directory, under a fresh name: in a shared one anybody
  // could plant the pid the teardown signals, forge the error text, or read the process file.
  const pidFile = target.execFile('pid');
  const processFile = target.execFile('process.json');
  // runc's own messages go to a log file, so the client's stderr carries only the command's, and a
  // failure to start the command is told apart from the command's exit code. Made here, exclusively
  // and private, for runc to append to.
  const logFile = target.execFile('log');
  try {
    await writeProcessFile(processFile, execProcess(target.process, request.cmd, request.tty));
    await writeFile(logFile, '', { mode: 0o600, flag: 'wx' });
  } catch (err) {
    await Promise.all([rm(processFile, { force: true }), rm(logFile, { force: true })]);
    throw err;
  }
  const runcArgs = [
    `--root=${target.runtimeRoot}`,
    ...target.runtimeFlags,
    '--log',
    logFile,
    '--log-format',
    'json',
    'exec',
    '--pid-file',
    pidFile,
    '--process',
    processFile,
    target.id,
  ];
  let child: ChildProcess;
  if (request.tty) {
    // runc gives the container's terminal the size of its own at start: set it before runc runs,
    // from the client's first resize (clients send it right away), so the command never sees 0x0.
    const size = await firstSize(io, INITIAL_SIZE_WAIT_MS);
    const line = `stty rows ${size.height} cols ${size.width} 2>/dev/null; ${['exec', target.runtimePath, ...runcArgs].map((a, i) => (i === 0 ? a : shellQuote(a))).join(' ')}`;
    child = spawn('script', ['--quiet', '--flush', '--return', '--command', line, '/dev/null'], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, SHELL: '/bin/sh' },
      detached: true,
    });
  } else {
    child = spawn(target.runtimePath, runcArgs, {
      stdio: [io.stdin ? 'pipe' : 'ignore', io.stdout ? 'pipe' : 'ignore', io.stderr ? 'pipe' : 'ignore'],
      detached: true,
    });
  }

  const onAbort = () => void killExec(child, pidFile, target.cgroupPath);
  io.signal.addEventListener('abort', onAbort, { once: true });
  if (io.signal.aborted) onAbort(); // the client left while we were starting

  if (io.stdin && child.stdin) {
    // The command may stop reading (or exit) while the client still types: drain what comes.
    child.stdin.on('error', () => io.stdin?.resume());
    io.stdin.pipe(child.stdin);
  } else child.stdin?.end();
  if (child.stdout) {
    if (io.stdout) child.stdout.pipe(io.stdout, { end: false });
    else child.stdout.resume();
  }
  if (child.stderr) {
    // With a TTY, script's own stderr carries only its diagnostics: keep them for the error.
    if (io.stderr && !request.tty) child.stderr.pipe(io.stderr, { end: false });
  }
  let diagnostics = '';
  if (request.tty) child.stderr?.setEncoding('utf8').on('data', (d: string) => (diagnostics = keepDiagnostics(diagnostics, d)));

  if (request.tty) io.resize.subscribeSerially((size) => resizeScriptPty(child, size));

  try {
    const code = await new Promise<number>((resolve, reject) => {
      child.once('error', (err) => reject(new Error(`cannot run ${request.tty ? 'script' : target.runtimePath}: ${err.message}`)));
      child.once('close', (code, signal) => resolve(code ?? 128 + (signal ? signalNumber(signal) : 0)));
    });
    if (code !== 0) {
      const failure = await runtimeError(logFile);
      if (failure) throw new Error(failure);
    }
    if (request.tty && code !== 0 && diagnostics.trim()) throw new Error(diagnostics.trim());
    return code;
  } finally {
    io.signal.removeEventListener('abort', onAbort);
    await rm(pidFile, { force: true });
    await rm(logFile, { force: true });
    await rm(processFile, { force: true });
  }
}

/** The most of a helper's stderr kept for an error message: what a container prints there is not ours to buffer. */
export const MAX_DIAGNOSTICS = 4096;

/** Appends to a helper's diagnostics, keeping the first MAX_DIAGNOSTICS characters. */
export function keepDiagnostics(kept: string, more: string): string {
  return kept.length >= MAX_DIAGNOSTICS ? kept : (kept + more).slice(0, MAX_DIAGNOSTICS);
}

/** The error runc logged, if it failed before or while starting the command. */
async function runtimeError(logFile: string): Promise<string | undefined> {
  const text = await readFile(logFile, 'utf8').catch(() => '');
  const errors: string[] = [];
  for (const line of text.split('\n')) {
    try {
      const entry = JSON.parse(line) as { level?: string; msg?: string };
      if ((entry.level === 'error' || entry.level === 'fatal') && entry.msg) errors.push(entry.msg);
    } catch {
      /* not a JSON line */
    }
  }
  return errors.length > 0 ? errors.join('; ') : undefined;
}

function signalNumber(signal: NodeJS.Signals): number {
  return osConstants.signals[signal] ?? 0;
}

/** How long a client that left waits for runc to name the command it started. */
const PID_FILE_WAIT_MS = 10_000;

/**
 * Kills the exec'd process group (runc setsid()s it) and runc itself. runc writes the pid file just
 * after the command started, and on a loaded node that can take a while: killing runc before then
 * would leave the command running with nobody to end it, so while runc lives, wait for the file.
 * The pid is signalled only if it is a process of the container (execPidSignallable).
 */
async function killExec(child: ChildProcess, pidFile: string, cgroupPath: string): Promise<void> {
  const readPid = async () => Number.parseInt(await readFile(pidFile, 'utf8').catch(() => ''), 10) || 0;
  const deadline = Date.now() + PID_FILE_WAIT_MS;
  let pid = await readPid();
  while (!pid && child.exitCode === null && child.signalCode === null && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
    pid = await readPid();
  }
  if (await execPidSignallable(pid, cgroupPath)) killGroup(pid);
  if (child.pid) killGroup(child.pid);
}

/** The pty script made for runc: the terminal on runc's stdin (runc is script's child). */
async function scriptPty(script: ChildProcess): Promise<string | undefined> {
  if (!script.pid) return undefined;
  const children = await readFile(`/proc/${script.pid}/task/${script.pid}/children`, 'utf8').catch(() => '');
  for (const pid of children.split(/\s+/).filter(Boolean)) {
    const tty = await readlink(`/proc/${pid}/fd/0`).catch(() => '');
    if (tty.startsWith('/dev/pts/')) return tty;
  }
  return undefined;
}

const PTY_WAIT_MS = 5_000;

async function resizeScriptPty(script: ChildProcess, size: TerminalSize): Promise<void> {
  // The first size usually arrives before runc has started: wait for the pty (bounded; a loaded node
  // can take seconds to start the exec, and a size dropped here would never be applied).
  let pty: string | undefined;
  for (let i = 0; i < PTY_WAIT_MS / 25 && !pty && script.exitCode === null; i++) {
    pty = await scriptPty(script);
    if (!pty) await new Promise((r) => setTimeout(r, 25));
  }
  if (!pty) return;
  await new Promise<void>((resolve) => {
    execFile('stty', ['-F', pty, 'rows', String(size.height), 'cols', String(size.width)], { timeout: 5_000 }, () => resolve());
  });
}
