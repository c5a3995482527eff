// Starts a real docker-registry (Debian's /usr/bin/docker-registry) on loopback with its own config,
// storage and port, optionally behind htpasswd basic auth or token auth. Several instances may share
// one storage directory: tests push through an open one and pull through a guarded one.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const REGISTRY_BIN = '/usr/bin/docker-registry';

export interface RegistryAuth {
  htpasswd?: { users: Record<string, string> };
  token?: { realm: string; service: string; issuer: string; rootCertBundle: string };
}

export interface RunningRegistry {
  /** `127.0.0.1:PORT` */
  host: string;
  url: string;
  storageDir: string;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export async function startRegistry(opts: { storageDir?: string; auth?: RegistryAuth } = {}): Promise<RunningRegistry> {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-registry-'));
  const storageDir = opts.storageDir ?? join(dir, 'storage');
  mkdirSync(storageDir, { recursive: true });
  let authYaml = '';
  if (opts.auth?.htpasswd) {
    const file = join(dir, 'htpasswd');
    writeFileSync(file, '');
    for (const [user, pass] of Object.entries(opts.auth.htpasswd.users)) {
      execFileSync('htpasswd', ['-B', '-b', file, user, pass], { stdio: 'ignore', timeout: 10_000 });
    }
    authYaml = `auth:\n  htpasswd:\n    realm: skiff-test\n    path: ${file}\n`;
  } else if (opts.auth?.token) {
    const t = opts.auth.token;
    authYaml = `auth:\n  token:\n    realm: ${t.realm}\n    service: ${t.service}\n    issuer: ${t.issuer}\n    rootcertbundle: ${t.rootCertBundle}\n`;
  }
  const port = await freePort();
  const config = join(dir, 'config.yml');
  writeFileSync(
    config,
    `version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: ${storageDir}
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: 127.0.0.1:${port}
  secret: skiff-test-secret
${authYaml}`,
  );
  const child: ChildProcess = spawn(REGISTRY_BIN, ['serve', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr = (stderr + String(d)).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const host = `127.0.0.1:${port}`;
  const url = `http://${host}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`docker-registry exited at startup: ${stderr.trim()}`);
    }
    try {
      const res = await fetch(`${url}/v2/`, { signal: AbortSignal.timeout(1000) });
      await res.arrayBuffer();
      if (res.status === 200 || res.status === 401) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`docker-registry did not answer on ${url} within 15 s: ${stderr.trim()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { host, url, storageDir, stop };
}
