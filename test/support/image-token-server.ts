// A tiny registry token server for tests of the bearer-token flow: it checks basic credentials (or an
// OAuth2 refresh token) and issues ES256 JWTs that a docker-registry configured with `auth: token`
// and this server's certificate accepts.
import { createPrivateKey, createPublicKey, createHash, sign, randomBytes, type KeyObject } from 'node:crypto';
import { selfSignedCert } from './registry.ts';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TokenServer {
  realm: string;
  service: string;
  issuer: string;
  certPath: string;
  /** Requests served, by grant kind. */
  counts: { password: number; refresh: number; anonymous: number; denied: number };
  stop(): Promise<void>;
}

const b64url = (data: Buffer | string) => Buffer.from(data).toString('base64url');

/** The key id docker-registry computes for a trusted key (libtrust: base32 of SHA-256 of the SPKI, 240 bits, in groups of 4). */
function libtrustKeyId(pub: KeyObject): string {
  const der = pub.export({ type: 'spki', format: 'der' });
  const bits = createHash('sha256').update(der).digest().subarray(0, 30);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let out = '';
  let buffer = 0;
  let count = 0;
  for (const byte of bits) {
    buffer = (buffer << 8) | byte;
    count += 8;
    while (count >= 5) {
      out += alphabet[(buffer >> (count - 5)) & 31];
      count -= 5;
    }
  }
  return out.match(/.{4}/g)!.join(':');
}

export async function startTokenServer(opts: { users: Record<string, string>; refreshTokens?: Record<string, string> }): Promise<TokenServer> {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-token-'));
  const { certPath, keyPath } = selfSignedCert(dir, 'skiff-test-token');
  const key = createPrivateKey(readFileSync(keyPath));
  const kid = libtrustKeyId(createPublicKey(key));
  const service = 'skiff-test-registry';
  const issuer = 'skiff-test-issuer';
  const counts = { password: 0, refresh: 0, anonymous: 0, denied: 0 };

  const issue = (subject: string, scopes: string[]) => {
    const now = Math.floor(Date.now() / 1000);
    const access = scopes
      .map((s) => s.split(':'))
      .filter((p) => p[0] === 'repository' && p.length >= 3)
      .map((p) => ({ type: 'repository', name: p.slice(1, -1).join(':'), actions: subject ? p[p.length - 1].split(',').filter((a) => a === 'pull') : [] }));
    const header = b64url(JSON.stringify({ alg: 'ES256', typ: 'JWT', kid }));
    const claims = b64url(
      JSON.stringify({ iss: issuer, sub: subject, aud: service, exp: now + 300, nbf: now - 10, iat: now, jti: randomBytes(8).toString('hex'), access }),
    );
    const signature = sign('sha256', Buffer.from(`${header}.${claims}`), { key, dsaEncoding: 'ieee-p1363' });
    return `${header}.${claims}.${b64url(signature)}`;
  };

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== '/token') return send(res, 404, { error: 'not found' });
    if (req.method === 'POST') {
      let body = '';
      for await (const chunk of req) body += String(chunk);
      const form = new URLSearchParams(body);
      const subject = form.get('grant_type') === 'refresh_token' ? opts.refreshTokens?.[form.get('refresh_token') ?? ''] : undefined;
      if (!subject) {
        counts.denied++;
        return send(res, 401, { error: 'invalid_grant' });
      }
      counts.refresh++;
      return send(res, 200, { access_token: issue(subject, (form.get('scope') ?? '').split(' ')), expires_in: 300 });
    }
    const scopes = url.searchParams.getAll('scope');
    const auth = req.headers.authorization;
    if (!auth) {
      counts.anonymous++;
      return send(res, 200, { token: issue('', scopes), expires_in: 300 });
    }
    const [user, ...rest] = Buffer.from(auth.replace(/^Basic /, ''), 'base64')
      .toString('utf8')
      .split(':');
    if (!auth.startsWith('Basic ') || opts.users[user] === undefined || opts.users[user] !== rest.join(':')) {
      counts.denied++;
      return send(res, 401, { errors: [{ code: 'UNAUTHORIZED', message: 'bad credentials' }] });
    }
    counts.password++;
    send(res, 200, { token: issue(user, scopes), expires_in: 300, issued_at: new Date().toISOString() });
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err) => send(res, 500, { error: String(err) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    realm: `http://127.0.0.1:${port}/token`,
    service,
    issuer,
    certPath,
    counts,
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
