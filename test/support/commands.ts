// Running client programs (kubectl and the like) and plain HTTP fetches from tests, bounded in time.
import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CommandOptions {
  env?: Record<string, string>;
  /** Written to stdin, which is then closed. */
  input?: string;
  /** Leave stdin open (a terminal session whose user never types EOF); otherwise it is closed at once. */
  holdStdin?: boolean;
  timeoutMs?: number;
}

/** Runs a command with a hard deadline; a hang fails the test with what it printed. */
export function runCommand(cmd: string, args: string[], options: CommandOptions = {}): Promise<CommandResult> {
  const timeoutMs = options.timeoutMs ?? 20_000;
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...options.env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${cmd} ${args.join(' ')} did not finish in ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.on('error', () => {});
    if (options.input !== undefined) child.stdin.end(options.input);
    else if (!options.holdStdin) child.stdin.end();
  });
}

/** GET /index.html from 127.0.0.1:`port` (a pod web server behind a port-forward), as text. */
export function httpGetIndex(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/index.html', timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve(body));
    });
    req.on('timeout', () => req.destroy(new Error(`GET via port ${port} timed out`)));
    req.on('error', reject);
    req.end();
  });
}
