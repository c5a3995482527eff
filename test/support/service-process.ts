// A service a test runs (a registry, a proxy): its stderr's tail for the error when it does not come
// up, and a stop that asks with SIGTERM, then kills after 3 s, and removes its directory.
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';

export interface ServiceProcess {
  child: ChildProcess;
  /** The last 4000 characters it wrote to stderr. */
  stderr(): string;
  stop(): Promise<void>;
}

export function startServiceProcess(command: string, args: readonly string[], dir: string): ServiceProcess {
  const child: ChildProcess = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let tail = '';
  child.stderr!.on('data', (d) => (tail = (tail + String(d)).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  return { child, stderr: () => tail, stop };
}
