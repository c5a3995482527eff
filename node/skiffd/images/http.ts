// A small HTTP(S) client over node:http/https: the registry client needs per-request control of TLS
// (trust, client certificates, verification), proxies, redirects that drop credentials when they
// leave the host, and bounded waits. TLS settings and proxies live in ./transport/.
import http from 'node:http';
import https from 'node:https';
import { TLSSocket } from 'node:tls';
import type { IncomingMessage } from 'node:http';
import type { EndpointTls } from './registry-config.ts';
import { proxyAuthorization, proxyFor, TunnelAgent } from './transport/proxy.ts';
import { cachedAgent, describeTlsFailure } from './transport/tls.ts';

const AGENT_OPTIONS = { keepAlive: true, maxSockets: 16 };
const httpAgent = new http.Agent(AGENT_OPTIONS);

export interface HttpRequest {
  method?: string;
  url: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Skip TLS certificate verification. */
  insecure?: boolean;
  /** Trust, client certificates and verification for this endpoint (also used for its redirects). */
  tls?: EndpointTls;
  /** Where HTTPS_PROXY, HTTP_PROXY and NO_PROXY are read: process.env (at each request) unless given. */
  env?: NodeJS.ProcessEnv;
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
/** The response a pooled socket is carrying now, for its idle timeout to fail with a reason. */
const liveResponses = new WeakMap<object, IncomingMessage>();
/** Sockets whose TLS handshake completed: a reset before that is the server refusing the handshake. */
const securedSockets = new WeakSet<object>();

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
  const timeout = req.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const proxy = proxyFor(url, req.env);
  let options: http.RequestOptions;
  if (isHttps) {
    const agent = cachedAgent(req.tls, req.insecure === true, proxy ? `${proxy.href} ${timeout}` : '', (tlsOpts) =>
      proxy ? new TunnelAgent({ ...AGENT_OPTIONS, ...tlsOpts }, proxy, timeout) : new https.Agent({ ...AGENT_OPTIONS, ...tlsOpts }),
    );
    options = { method, headers, agent, signal: req.signal };
  } else if (proxy) {
    // Plain HTTP through a proxy: the absolute URI goes to the proxy.
    const h: Record<string, string> = { ...headers, Host: url.host };
    const auth = proxyAuthorization(proxy);
    if (auth) h['Proxy-Authorization'] = auth;
    const viaTls = proxy.protocol === 'https:';
    const agent = viaTls ? cachedAgent(undefined, false, '', (tlsOpts) => new https.Agent({ ...AGENT_OPTIONS, ...tlsOpts })) : httpAgent;
    const host = proxy.hostname.replace(/^\[|\]$/g, '');
    options = { method, headers: h, agent, signal: req.signal, host, port: proxy.port || (viaTls ? 443 : 80), path: url.href, protocol: proxy.protocol };
  } else {
    options = { method, headers, agent: httpAgent, signal: req.signal };
  }
  return new Promise((resolve, reject) => {
    const r =
      proxy && !isHttps ? (proxy.protocol === 'https:' ? https : http).request(options, resolve) : (isHttps ? https : http).request(url, options, resolve);
    let handshakeDone = !isHttps;
    // One idle-timeout listener per (pooled) socket: it bounds connect, the answer and every read of
    // the body, and destroys whatever request or response is using the socket then.
    r.on('socket', (socket) => {
      if (socket instanceof TLSSocket) {
        if (securedSockets.has(socket)) handshakeDone = true;
        else
          socket.once('secureConnect', () => {
            securedSockets.add(socket);
            handshakeDone = true;
          });
      }
      // On every request, not once per socket: the agent sets a pooled socket's timeout back to its own
      // (none) when it frees it, so a reused keep-alive connection would otherwise wait forever.
      socket.setTimeout(timeout);
      if (timedSockets.has(socket)) return;
      timedSockets.add(socket);
      socket.on('timeout', () => {
        const err = new Error(`${url.host}: no progress for ${socket.timeout} ms ([registry] pull_progress_timeout)`);
        // The body being read then fails with this reason, not a bare "aborted".
        liveResponses.get(socket)?.destroy(err);
        socket.destroy(err);
      });
    });
    r.on('response', (res) => {
      const socket = res.socket;
      if (!socket) return;
      liveResponses.set(socket, res);
      res.once('close', () => liveResponses.get(socket) === res && liveResponses.delete(socket));
    });
    r.on('error', (err) => reject((isHttps && describeTlsFailure(err, url.host, req.tls, handshakeDone)) || err));
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
