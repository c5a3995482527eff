// Starts a real docker-registry (Debian's /usr/bin/docker-registry) on loopback, or in a network
// namespace the test made, with its own config, storage and port, optionally behind htpasswd basic
// auth or token auth. Several instances may share one storage directory: tests push through an open
// one and pull through a guarded one.
import { startServiceProcess } from './service-process.ts';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, mkdirSync } from 'node:fs';
import { createServer, isIP } from 'node:net';
import http from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const REGISTRY_BIN = '/usr/bin/docker-registry';

export interface RegistryAuth {
  htpasswd?: { users: Record<string, string> };
  token?: { realm: string; service: string; issuer: string; rootCertBundle: string };
}

export interface RegistryTls {
  certPath: string;
  keyPath: string;
  /** CA bundles client certificates must chain to: the registry then requires one. */
  clientCas?: string[];
}

/**
 * A self-signed certificate (nobody trusts it: only `insecure = true` gets through). For an IP address
 * it also names that address as its subjectAltName, as TLS clients check.
 */
export function selfSignedCert(dir: string, commonName = '127.0.0.1'): RegistryTls {
  const certPath = join(dir, 'tls.crt');
  const keyPath = join(dir, 'tls.key');
  const san = isIP(commonName) ? ['-addext', `subjectAltName=IP:${commonName}`] : [];
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyPath,
      '-out',
      certPath,
      '-days',
      '2',
      '-subj',
      `/CN=${commonName}`,
      ...san,
    ],
    { stdio: 'ignore', timeout: 20_000 },
  );
  return { certPath, keyPath };
}

export interface RunningRegistry {
  /** `127.0.0.1:PORT` */
  host: string;
  url: string;
  storageDir: string;
  /** What docker-registry wrote to stderr (its errors; the access log is off). */
  log(): string;
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

export async function startRegistry(
  opts: {
    storageDir?: string;
    auth?: RegistryAuth;
    tls?: RegistryTls;
    /** IP to listen on (default 127.0.0.1). */
    address?: string;
    /** A network namespace (`ip netns` name) to run in, listening on `address` there. */
    netns?: string;
  } = {},
): Promise<RunningRegistry> {
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
  const address = opts.address ?? '127.0.0.1';
  const clientCas = opts.tls?.clientCas?.length ? `    clientcas:\n${opts.tls.clientCas.map((f) => `      - ${f}\n`).join('')}` : '';
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
  addr: ${address}:${port}
  secret: skiff-test-secret
${opts.tls ? `  tls:\n    certificate: ${opts.tls.certPath}\n    key: ${opts.tls.keyPath}\n` : ''}${clientCas}${authYaml}`,
  );
  // ip netns exec execs the registry in place: the child is the registry, signals reach it.
  const argv = opts.netns ? (['ip', ['netns', 'exec', opts.netns, REGISTRY_BIN, 'serve', config]] as const) : ([REGISTRY_BIN, ['serve', config]] as const);
  const { child, stderr, stop } = startServiceProcess(argv[0], argv[1], dir);
  const host = `${address}:${port}`;
  const url = `${opts.tls ? 'https' : 'http'}://${host}`;
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`docker-registry exited at startup: ${stderr().trim()}`);
    }
    const status = await probe(`${url}/v2/`);
    if (status === 200 || status === 401 || (status === -1 && opts.tls?.clientCas?.length)) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`docker-registry did not answer on ${url} within 15 s: ${stderr().trim()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { host, url, storageDir, log: stderr, stop };
}

/**
 * The HTTP status of GET url (TLS unverified), 0 when nothing answers within a second, or -1 when a
 * TLS server answered but ended the handshake (one that requires a client certificate does).
 */
function probe(url: string): Promise<number> {
  return new Promise((resolve) => {
    const lib = url.startsWith('https:') ? https : http;
    const req = lib.get(url, { rejectUnauthorized: false, timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', (err: NodeJS.ErrnoException) => resolve(String(err.code).startsWith('ERR_SSL_') ? -1 : 0));
  });
}
