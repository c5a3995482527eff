// Runs the short-lived helpers pods and CNI need (unshare, nsenter, umount, CNI plugins) with a hard
// deadline, so a wedged helper turns into an error instead of a hung RPC.
import { spawn } from 'node:child_process';
import { helperCanRun, notFound, runThroughHelper } from '../util/helper-shell.ts';

export interface CommandOutput {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

export interface CommandOptions {
  timeoutMs: number;
  input?: string;
  env?: NodeJS.ProcessEnv;
  /** Variables added to the daemon's environment (what CNI plugins get); `env` replaces it instead. */
  extraEnv?: Record<string, string>;
}

/** Resolves whatever the exit status; rejects only when the program cannot be started. */
export function execCommand(file: string, args: string[], options: CommandOptions): Promise<CommandOutput> {
  // Calls without an environment of their own go through a helper shell: no fork of the daemon.
  // Added variables are set by env(1), which then execs the program.
  const extra = Object.entries(options.extraEnv ?? {}).map(([k, v]) => `${k}=${v}`);
  const [hFile, hArgs] = extra.length > 0 ? ['env', [...extra, file, ...args]] : [file, args];
  if (options.env === undefined && helperCanRun(hFile, hArgs, options.input)) {
    const helped = runThroughHelper(hFile, hArgs, options.timeoutMs, options.input);
    // 127: not found (a spawn reports that as an error); a broken helper: spawn instead.
    if (helped) {
      return helped.then(
        (r) => (notFound(r, file) ? spawnCommand(file, args, options) : { ...r, timedOut: r.signal === 'SIGKILL' && r.stderr.endsWith(`(timed out after ${options.timeoutMs} ms)`) }),
        () => spawnCommand(file, args, options),
      );
    }
  }
  return spawnCommand(file, args, options);
}

function spawnCommand(file: string, args: string[], options: CommandOptions): Promise<CommandOutput> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      env: options.env ?? (options.extraEnv ? { ...process.env, ...options.extraEnv } : process.env),
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, options.timeoutMs);
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
