// Proxies from skiffd's environment, read as Go's net/http reads them (containerd and CRI-O are Go):
// HTTPS_PROXY then https_proxy for https URLs, HTTP_PROXY then http_proxy for http URLs (no fallback
// from one to the other), NO_PROXY then no_proxy for exceptions. Requests to localhost and loopback
// addresses never use a proxy. Read at each request, so the decision is per URL (a blob redirect
// to a CDN host is decided on its own).
import net, { BlockList, isIP } from 'node:net';
import https from 'node:https';
import tls from 'node:tls';
import type { Duplex } from 'node:stream';

function env(upper: string, lower: string, from: NodeJS.ProcessEnv): string {
  return from[upper] || from[lower] || '';
}

/** `[::1]` → `::1`; other hosts as they are. */
function bare(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

function defaultPort(url: URL): string {
  return url.port || (url.protocol === 'https:' ? '443' : '80');
}

/** The proxy for this URL, or undefined to connect directly. */
export function proxyFor(url: URL, from: NodeJS.ProcessEnv = process.env): URL | undefined {
  const raw = url.protocol === 'https:' ? env('HTTPS_PROXY', 'https_proxy', from) : url.protocol === 'http:' ? env('HTTP_PROXY', 'http_proxy', from) : '';
  if (!raw) return undefined;
  if (!proxyAllowed(url, env('NO_PROXY', 'no_proxy', from))) return undefined;
  return parseProxy(raw);
}

function parseProxy(raw: string): URL {
  let proxy: URL | undefined;
  try {
    proxy = new URL(raw);
  } catch {
    /* host:port without a scheme */
  }
  // Like Go: anything without a scheme and host is host[:port] of an http proxy.
  if (!proxy?.host) proxy = new URL(`http://${raw}`);
  if (proxy.protocol !== 'http:' && proxy.protocol !== 'https:') {
    throw new Error(`proxy ${proxy.protocol}//${proxy.host}: only http:// and https:// proxies are supported`);
  }
  return proxy;
}

/** False when NO_PROXY (or loopback) says to connect directly. */
export function proxyAllowed(url: URL, noProxy: string): boolean {
  const host = bare(url.hostname).toLowerCase();
  const port = defaultPort(url);
  if (host === 'localhost') return false;
  const family = isIP(host);
  if (family && isLoopback(host, family)) return false;
  for (let entry of noProxy.split(',')) {
    entry = entry.trim().toLowerCase();
    if (!entry) continue;
    if (entry === '*') return false;
    const slash = entry.indexOf('/');
    if (slash > 0) {
      const [net_, bits] = [bare(entry.slice(0, slash)), Number(entry.slice(slash + 1))];
      const netFamily = isIP(net_);
      if (netFamily && family === netFamily && Number.isInteger(bits)) {
        const list = new BlockList();
        try {
          list.addSubnet(net_, bits, netFamily === 6 ? 'ipv6' : 'ipv4');
        } catch {
          continue;
        }
        if (list.check(host, family === 6 ? 'ipv6' : 'ipv4')) return false;
      }
      continue;
    }
    let entryHost = entry;
    let entryPort = '';
    const hp = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(entry);
    if (hp) [entryHost, entryPort] = [hp[1], hp[2]];
    entryHost = bare(entryHost);
    if (entryPort && entryPort !== port) continue;
    if (isIP(entryHost)) {
      if (family && sameIp(entryHost, host)) return false;
      continue;
    }
    if (entryHost.startsWith('*.')) entryHost = entryHost.slice(1);
    // `.example.com` matches its subdomains; `example.com` matches itself and its subdomains.
    if (entryHost.startsWith('.') ? host.endsWith(entryHost) : host === entryHost || host.endsWith(`.${entryHost}`)) return false;
  }
  return true;
}

function isLoopback(ip: string, family: number): boolean {
  const list = new BlockList();
  list.addSubnet('127.0.0.0', 8, 'ipv4');
  list.addAddress('::1', 'ipv6');
  list.addSubnet('::ffff:127.0.0.0', 104, 'ipv6');
  return list.check(ip, family === 6 ? 'ipv6' : 'ipv4');
}

function sameIp(a: string, b: string): boolean {
  const list = new BlockList();
  const fa = isIP(a);
  list.addAddress(a, fa === 6 ? 'ipv6' : 'ipv4');
  return list.check(b, isIP(b) === 6 ? 'ipv6' : 'ipv4');
}

/** `Basic ...` for a proxy URL that carries user:password, else undefined. */
export function proxyAuthorization(proxy: URL): string | undefined {
  if (!proxy.username && !proxy.password) return undefined;
  const user = decodeURIComponent(proxy.username);
  const pass = decodeURIComponent(proxy.password);
  return `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
}

/** The proxy as it may appear in messages: no credentials. */
export function proxyLabel(proxy: URL): string {
  return `${proxy.protocol}//${proxy.host}`;
}

/**
 * A connection to host:port through the proxy's CONNECT, open and ready for TLS. Bounded by
 * `timeoutMs` of silence, like every other wait of the registry client.
 */
export function openTunnel(proxy: URL, host: string, port: number, timeoutMs: number): Promise<Duplex> {
  const target = `${isIP(bare(host)) === 6 ? `[${bare(host)}]` : host}:${port}`;
  const proxyPort = Number(proxy.port || (proxy.protocol === 'https:' ? 443 : 80));
  const label = proxyLabel(proxy);
  return new Promise((resolve, reject) => {
    const socket: net.Socket | tls.TLSSocket =
      proxy.protocol === 'https:'
        ? tls.connect({ host: bare(proxy.hostname), port: proxyPort, servername: isIP(bare(proxy.hostname)) ? undefined : proxy.hostname })
        : net.connect({ host: bare(proxy.hostname), port: proxyPort });
    let answer = Buffer.alloc(0);
    const fail = (err: Error) => {
      socket.destroy();
      reject(err);
    };
    const onTimeout = () => fail(new Error(`proxy ${label}: no answer to CONNECT ${target} within ${timeoutMs} ms`));
    const onError = (err: Error) => fail(new Error(`proxy ${label}: ${err.message}`, { cause: err }));
    const onData = (chunk: Buffer) => {
      answer = Buffer.concat([answer, chunk]);
      const end = answer.indexOf('\r\n\r\n');
      if (end < 0) {
        if (answer.length > 64 * 1024) fail(new Error(`proxy ${label}: answer to CONNECT ${target} too long`));
        return;
      }
      socket.off('data', onData);
      socket.off('error', onError);
      socket.off('timeout', onTimeout);
      socket.setTimeout(0);
      socket.pause();
      const head = answer.subarray(0, end).toString('latin1');
      const status = Number(/^HTTP\/\d(?:\.\d)? (\d{3})/.exec(head)?.[1] ?? 0);
      if (status !== 200) {
        const line = head.split('\r\n')[0];
        const hint = status === 407 ? ' (the proxy requires credentials: put user:password in the proxy URL)' : '';
        socket.destroy();
        reject(new Error(`proxy ${label} refused CONNECT ${target}: ${line}${hint}`));
        return;
      }
      // Bytes after the answer belong to the tunnel (a server speaking first); give them back.
      const rest = answer.subarray(end + 4);
      if (rest.length) socket.unshift(rest);
      resolve(socket);
    };
    socket.setTimeout(timeoutMs);
    socket.on('timeout', onTimeout);
    socket.on('error', onError);
    socket.on('data', onData);
    const lines = [`CONNECT ${target} HTTP/1.1`, `Host: ${target}`, 'User-Agent: skiffd'];
    const auth = proxyAuthorization(proxy);
    if (auth) lines.push(`Proxy-Authorization: ${auth}`);
    socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  });
}

/** An https.Agent whose connections go through a proxy's CONNECT tunnel, then TLS to the registry. */
export class TunnelAgent extends https.Agent {
  constructor(
    options: https.AgentOptions,
    private readonly proxy: URL,
    private readonly timeoutMs: number,
  ) {
    super(options);
  }

  override createConnection(options: https.RequestOptions, done?: (err: Error | null, stream: Duplex) => void): Duplex | null | undefined {
    const host = options.host ?? 'localhost';
    const port = Number(options.port ?? 443);
    openTunnel(this.proxy, host, port, this.timeoutMs).then(
      (socket) => {
        // SNI and the name check are the registry's, not the proxy's.
        const servername = isIP(bare(host)) ? undefined : host;
        done?.(null, tls.connect({ ...(options as tls.ConnectionOptions), socket, servername }));
      },
      (err: Error) => done?.(err, undefined as unknown as Duplex),
    );
    // The connection arrives through `done` once the tunnel is up.
    return undefined;
  }
}
