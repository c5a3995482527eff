// Debian's tinyproxy on loopback as the HTTP proxy a company puts in front of the internet: plain
// requests by absolute URI and CONNECT tunnels to the listed ports only, every request logged.
import { startServiceProcess } from './service-process.ts';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './registry.ts';

export interface RunningProxy {
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** The request lines tinyproxy logged so far (`CONNECT host:port HTTP/1.1`, `GET http://... HTTP/1.1`). */
  requests(): string[];
  stop(): Promise<void>;
}

export async function startTinyproxy(opts: { connectPorts: number[] }): Promise<RunningProxy> {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-tinyproxy-'));
  const port = await freePort();
  const logFile = join(dir, 'tinyproxy.log');
  const config = join(dir, 'tinyproxy.conf');
  writeFileSync(
    config,
    [
      `Port ${port}`,
      'Listen 127.0.0.1',
      'Allow 127.0.0.1',
      // tinyproxy refuses CONNECT to any port not listed.
      ...[443, ...opts.connectPorts].map((p) => `ConnectPort ${p}`),
      `LogFile "${logFile}"`,
      'LogLevel Connect',
      'Timeout 30',
      'MaxClients 50',
      `PidFile "${join(dir, 'tinyproxy.pid')}"`,
      ...(process.getuid?.() === 0 ? ['User nobody', 'Group nogroup'] : []),
      '',
    ].join('\n'),
  );
  // Reachable and writable by the user tinyproxy drops to.
  chmodSync(dir, 0o755);
  writeFileSync(logFile, '');
  chmodSync(logFile, 0o666);
  const { child, stderr, stop } = startServiceProcess('tinyproxy', ['-d', '-c', config], dir);
  const deadline = Date.now() + 10_000;
  while (!(await listening(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`tinyproxy did not start on 127.0.0.1:${port}: ${stderr().trim()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const requests = () =>
    readFileSync(logFile, 'utf8')
      .split('\n')
      .map((line) => /Request \(file descriptor \d+\): (.*)$/.exec(line)?.[1])
      .filter((r): r is string => r !== undefined);
  return { url: `http://127.0.0.1:${port}`, requests, stop };
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}
