// Runs a short-lived helper command (runc, mount...) with a hard deadline, capturing its output.
import { spawn } from 'node:child_process';
import { helperCanRun, notFound, runThroughHelper } from '../util/helper-shell.ts';

export interface CommandResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  timeoutMs?: number;
  input?: string | Buffer;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
}

export class CommandError extends Error {
  constructor(
    readonly command: string,
    readonly result: CommandResult,
  ) {
    const why = result.signal ? `killed by ${result.signal}` : `exit code ${result.code}`;
    const detail = (result.stderr || result.stdout).trim();
    super(`${command} failed (${why})${detail ? `: ${detail}` : ''}`);
    this.name = 'CommandError';
  }
}

/** Resolves with the result whatever the exit status; rejects only if the command cannot be spawned. */
export function runCommand(file: string, args: string[], options: RunOptions = {}): Promise<CommandResult> {
  // Plain calls (no input, cwd or env of their own) go through a helper shell: no fork of the daemon.
  if (options.input === undefined && options.cwd === undefined && options.env === undefined && helperCanRun(file, args)) {
    const helped = runThroughHelper(file, args, options.timeoutMs && options.timeoutMs > 0 ? options.timeoutMs : 24 * 3600_000);
    // 127: not found (a spawn reports that as an error); a broken helper: spawn instead.
    if (helped) return helped.then((r) => (notFound(r, file) ? spawnCommand(file, args, options) : r), () => spawnCommand(file, args, options));
  }
  return spawnCommand(file, args, options);
}

function spawnCommand(file: string, args: string[], options: RunOptions): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer =
      options.timeoutMs && options.timeoutMs > 0
        ? setTimeout(() => {
            stderr += `\n(timed out after ${options.timeoutMs} ms)`;
            child.kill('SIGKILL');
          }, options.timeoutMs)
        : undefined;
    child.on('error', (err) => {
      if (timer) clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    if (options.input !== undefined) child.stdin!.end(options.input);
  });
}

/** Like runCommand but a non-zero exit is a CommandError carrying stderr. */
export async function runChecked(file: string, args: string[], options: RunOptions = {}): Promise<CommandResult> {
  const result = await runCommand(file, args, options);
  if (result.code !== 0) throw new CommandError(`${file} ${args.slice(0, 4).join(' ')}`, result);
  return result;
}
