// A small HTTP(S) client over node:http/https: the registry client needs per-request control of TLS
// verification, redirects that drop credentials when they leave the host, and bounded waits.
import http from 'node:http';
import https from 'node:https';
import type { IncomingMessage } from 'node:http';

const agents = {
  http: new http.Agent({ keepAlive: true, maxSockets: 16 }),
  https: new https.Agent({ keepAlive: true, maxSockets: 16 }),
  httpsInsecure: new https.Agent({ keepAlive: true, maxSockets: 16, rejectUnauthorized: false }),
};

export interface HttpRequest {
  method?: string;
  url: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Skip TLS certificate verification. */
  insecure?: boolean;
  /** Idle timeout for connect and each read, ms. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface HttpResponse {
  status: number;
  headers: IncomingMessage['headers'];
  /** The URL that finally answered (after redirects). */
  url: string;
  body: IncomingMessage;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const timedSockets = new WeakSet<object>();

/** One request, following up to 5 redirects. Authorization is only sent to the original host. */
export async function request(req: HttpRequest): Promise<HttpResponse> {
  let url = new URL(req.url);
  const originHost = url.host;
  let method = req.method ?? 'GET';
  for (let hop = 0; hop <= 5; hop++) {
    const headers = { ...(req.headers ?? {}) };
    if (url.host !== originHost) delete headers.Authorization;
    const res = await once(url, method, headers, hop === 0 ? req.body : undefined, req);
    if (res.statusCode && [301, 302, 303, 307, 308].includes(res.statusCode) && res.headers.location) {
      res.resume();
      url = new URL(res.headers.location, url);
      if (res.statusCode === 303) method = 'GET';
      continue;
    }
    return { status: res.statusCode ?? 0, headers: res.headers, url: url.toString(), body: res };
  }
  throw new Error(`${req.url}: too many redirects`);
}

function once(url: URL, method: string, headers: Record<string, string>, body: string | Buffer | undefined, req: HttpRequest): Promise<IncomingMessage> {
  const isHttps = url.protocol === 'https:';
  const lib = isHttps ? https : http;
  const agent = isHttps ? (req.insecure ? agents.httpsInsecure : agents.https) : agents.http;
  const timeout = req.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    const r = lib.request(url, { method, headers, agent, signal: req.signal }, resolve);
    // One idle-timeout listener per (pooled) socket: it bounds connect, the answer and every read of
    // the body, and destroys whatever request or response is using the socket then.
    r.on('socket', (socket) => {
      if (timedSockets.has(socket)) return;
      timedSockets.add(socket);
      socket.setTimeout(timeout);
      socket.on('timeout', () => socket.destroy(new Error(`${url.host}: no data for ${timeout} ms`)));
    });
    r.on('error', reject);
    r.end(body);
  });
}

/** The whole body as a Buffer, refusing more than `limit` bytes. */
export async function readBody(res: HttpResponse, limit = 8 * 1024 * 1024): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of res.body) {
    total += (chunk as Buffer).length;
    if (total > limit) {
      res.body.destroy();
      throw new Error(`${res.url}: response larger than ${limit} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** Drain and discard a body so the connection can be reused. */
export function discard(res: HttpResponse): void {
  res.body.resume();
}
