// Runs the short-lived helpers skiffd needs (runc, mount, unshare, nsenter, CNI plugins) with a hard
// deadline, so a wedged helper turns into an error instead of a hung RPC.
import { spawn } from 'node:child_process';
import { helperCanRun, notFound, runThroughHelper } from './helper-shell.ts';

export interface CommandResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CommandOutput extends CommandResult {
  timedOut: boolean;
}

export interface CommandOptions {
  /** No deadline when absent or 0. */
  timeoutMs?: number;
  input?: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Variables added to the daemon's environment (what CNI plugins get); `env` replaces it instead. */
  extraEnv?: Record<string, string>;
}

/** A day stands in for "no deadline" where a helper shell needs one. */
const NO_DEADLINE_MS = 24 * 3600_000;

/** Resolves whatever the exit status; rejects only when the program cannot be started. */
export function execCommand(file: string, args: string[], options: CommandOptions = {}): Promise<CommandOutput> {
  const timeoutMs = options.timeoutMs && options.timeoutMs > 0 ? options.timeoutMs : undefined;
  // Calls without an environment or directory of their own go through a helper shell: no fork of
  // the daemon. Added variables are set by env(1), which then execs the program.
  const extra = Object.entries(options.extraEnv ?? {}).map(([k, v]) => `${k}=${v}`);
  const [hFile, hArgs] = extra.length > 0 ? ['env', [...extra, file, ...args]] : [file, args];
  if (options.env === undefined && options.cwd === undefined && helperCanRun(hFile, hArgs, options.input)) {
    const limit = timeoutMs ?? NO_DEADLINE_MS;
    const helped = runThroughHelper(hFile, hArgs, limit, options.input);
    // 127: not found (a spawn reports that as an error); a broken helper: spawn instead.
    if (helped) {
      return helped.then(
        (r) =>
          notFound(r, file)
            ? spawnCommand(file, args, options, timeoutMs)
            : { ...r, timedOut: r.signal === 'SIGKILL' && r.stderr.endsWith(`(timed out after ${limit} ms)`) },
        () => spawnCommand(file, args, options, timeoutMs),
      );
    }
  }
  return spawnCommand(file, args, options, timeoutMs);
}

/** execCommand without the timeout flag (a timeout shows as SIGKILL and a note on stderr). */
export async function runCommand(file: string, args: string[], options: CommandOptions = {}): Promise<CommandResult> {
  const { code, signal, stdout, stderr } = await execCommand(file, args, options);
  return { code, signal, stdout, stderr };
}

/** Like execCommand, but anything other than a clean exit 0 is an Error carrying stderr. */
export async function execChecked(file: string, args: string[], options: CommandOptions): Promise<CommandOutput> {
  const out = await execCommand(file, args, options);
  if (out.code !== 0) {
    const why = out.timedOut ? `timed out after ${options.timeoutMs} ms` : out.signal ? `killed by ${out.signal}` : `exit code ${out.code}`;
    const detail = (out.stderr || out.stdout).trim();
    throw new Error(`${file} ${args.join(' ')} failed (${why})${detail ? `: ${detail}` : ''}`);
  }
  return out;
}

function spawnCommand(file: string, args: string[], options: CommandOptions, timeoutMs: number | undefined): Promise<CommandOutput> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      cwd: options.cwd,
      env: options.env ?? (options.extraEnv ? { ...process.env, ...options.extraEnv } : process.env),
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            stderr += `\n(timed out after ${timeoutMs} ms)`;
            child.kill('SIGKILL');
          }, timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, timedOut });
    });
    if (options.input !== undefined) {
      // A program that exits without reading its stdin must not crash the daemon with EPIPE.
      child.stdin!.on('error', () => {});
      child.stdin!.end(options.input);
    }
  });
}
