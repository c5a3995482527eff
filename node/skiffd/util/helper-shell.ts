// Short helper commands (mount, umount, unshare, runc start/kill/delete) run through a few long-lived
// shells instead of one spawn each. A spawn from the daemon forks the whole Node process and blocks
// its event loop until the child has exec'd (3–5 ms here, on every call in flight); a small shell
// forks cheaply and the daemon only writes a request line. Measured: ~0.5 ms per command through a
// helper against ~3 ms for a spawn.
//
// Protocol: the daemon writes the argument count (and "input" when it sends stdin), then one argument
// per line, then the input as one line; the shell runs the command with that input (else /dev/null)
// as stdin, its stdout and stderr going to the shell's own, then prints
// "\n<token> <status>" on stdout and "\n<token>" on stderr. The token is random per shell, so command
// output cannot fake it. Arguments or input holding a newline cannot be sent; such calls spawn directly.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { killGroup } from './kill-group.ts';

export interface HelperResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

const SCRIPT = [
  't=$1',
  'while IFS=" " read -r n mode; do',
  '  set --',
  '  while [ "$n" -gt 0 ]; do IFS= read -r a; set -- "$@" "$a"; n=$((n - 1)); done',
  '  if [ "$mode" = input ]; then',
  '    IFS= read -r input',
  `    printf '%s' "$input" | "$@"`,
  '  else',
  '    "$@" </dev/null',
  '  fi',
  '  rc=$?',
  `  printf '\\n%s %s\\n' "$t" "$rc"`,
  `  printf '\\n%s\\n' "$t" >&2`,
  'done',
].join('\n');

interface Job {
  file: string;
  args: string[];
  input?: string;
  timeoutMs: number;
  resolve: (r: HelperResult) => void;
  reject: (err: Error) => void;
}

class HelperShell {
  private readonly token = randomBytes(12).toString('hex');
  private readonly child: ChildProcess;
  private stdout = '';
  private stderr = '';
  private current: { job: Job; timer: NodeJS.Timeout; code?: number } | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  dead = false;

  /** `surge`: a shell beyond the base set, which leaves after SURGE_IDLE_MS without work. */
  constructor(private readonly surge = false) {
    // Its own process group, so a timeout can kill the shell and whatever it runs at once.
    this.child = spawn('/bin/sh', ['-c', SCRIPT, 'skiffd-helper', this.token], { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    this.child.unref();
    for (const s of [this.child.stdin, this.child.stdout, this.child.stderr] as (NodeJS.ReadableStream & { unref?: () => void })[]) s.unref?.();
    this.child.stdin!.on('error', () => this.fail(new Error('helper shell closed its input')));
    this.child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      this.stdout += d;
      this.check();
    });
    this.child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      this.stderr += d;
      this.check();
    });
    this.child.on('error', (err) => this.fail(err));
    this.child.on('exit', () => this.fail(new Error('helper shell exited')));
  }

  get busy(): boolean {
    return this.current !== undefined;
  }

  run(job: Job): void {
    clearTimeout(this.idleTimer);
    const timer = setTimeout(() => {
      // The command hangs: the shell goes with it (its group), and the call gets what it printed.
      const current = this.current;
      this.current = undefined;
      this.kill();
      current?.job.resolve({ code: null, signal: 'SIGKILL', stdout: this.stdout, stderr: `${this.stderr}\n(timed out after ${job.timeoutMs} ms)` });
    }, job.timeoutMs);
    this.current = { job, timer };
    this.stdout = '';
    this.stderr = '';
    const head = job.input === undefined ? `${job.args.length + 1}` : `${job.args.length + 1} input`;
    const tail = job.input === undefined ? '' : `${job.input}\n`;
    this.child.stdin!.write(`${head}\n${[job.file, ...job.args].join('\n')}\n${tail}`);
  }

  private check(): void {
    const current = this.current;
    if (!current) return;
    if (current.code === undefined) {
      const at = this.stdout.indexOf(`\n${this.token} `);
      if (at < 0) return;
      const end = this.stdout.indexOf('\n', at + 1);
      if (end < 0) return;
      current.code = Number.parseInt(this.stdout.slice(at + this.token.length + 2, end), 10);
      this.stdout = this.stdout.slice(0, at);
    }
    const errAt = this.stderr.indexOf(`\n${this.token}\n`);
    if (errAt < 0) return;
    clearTimeout(current.timer);
    this.current = undefined;
    if (this.surge) {
      this.idleTimer = setTimeout(() => {
        if (!this.current) this.kill();
      }, SURGE_IDLE_MS);
      this.idleTimer.unref();
    }
    const code = current.code;
    current.job.resolve({
      code: code > 128 && code < 160 ? null : code,
      signal: code > 128 && code < 160 ? signalName(code - 128) : null,
      stdout: this.stdout,
      stderr: this.stderr.slice(0, errAt),
    });
  }

  private kill(): void {
    this.dead = true;
    if (this.child.pid) killGroup(this.child.pid);
  }

  private fail(err: Error): void {
    if (!this.dead) this.kill();
    const current = this.current;
    this.current = undefined;
    if (current) {
      clearTimeout(current.timer);
      current.job.reject(err);
    }
  }
}

function signalName(n: number): NodeJS.Signals | null {
  const names: Record<number, NodeJS.Signals> = { 1: 'SIGHUP', 2: 'SIGINT', 6: 'SIGABRT', 9: 'SIGKILL', 11: 'SIGSEGV', 13: 'SIGPIPE', 15: 'SIGTERM' };
  return names[n] ?? null;
}

// A node starting many pods at once runs dozens of commands concurrently: up to MAX_SHELLS shells then
// take them (each new one is a single fork of the daemon, instead of one per command); beyond the base
// set, a shell leaves once it has been idle for SURGE_IDLE_MS, so a quiet node keeps only BASE_SHELLS.
const BASE_SHELLS = 4;
const MAX_SHELLS = 16;
const SURGE_IDLE_MS = 20_000;
const shells: HelperShell[] = [];

/** Whether a call can go through a helper shell (no newline in any argument or in the input). */
export function helperCanRun(file: string, args: string[], input?: string): boolean {
  return !file.includes('\n') && args.every((a) => !a.includes('\n')) && !input?.includes('\n');
}

/**
 * Runs `file args...` through an idle helper shell; undefined when all are busy (the caller spawns
 * then, so one slow command never holds up another). Resolves whatever the exit status (a signal
 * death shows as the signal); rejects only if the helper itself broke.
 */
export function runThroughHelper(file: string, args: string[], timeoutMs: number, input?: string): Promise<HelperResult> | undefined {
  for (let i = shells.length - 1; i >= 0; i--) if (shells[i].dead) shells.splice(i, 1);
  let shell = shells.find((s) => !s.busy);
  if (!shell) {
    if (shells.length >= MAX_SHELLS) return undefined;
    shell = new HelperShell(shells.length >= BASE_SHELLS);
    shells.push(shell);
  }
  const chosen = shell;
  return new Promise((resolve, reject) => chosen.run({ file, args, input, timeoutMs, resolve, reject }));
}

/** The helper could not find the program (a spawn would have failed with ENOENT instead). */
export function notFound(r: HelperResult, file: string): boolean {
  return (
    r.code === 127 &&
    (r.stderr.includes(`${file}: not found`) || (r.stderr.startsWith('env: ') && r.stderr.includes(file) && r.stderr.includes('No such file')))
  );
}
