// A small client of a real kube-apiserver for tests: JSON over HTTPS with the cluster's CA and an admin
// client certificate. Tests act through kubectl as a user would; this client only reads state to wait
// on it, which a poll through kubectl would pay a process start for every time.
import { readFileSync } from 'node:fs';
import { request } from 'node:https';

export interface KubeApiCredentials {
  server: string;
  caFile: string;
  certFile: string;
  keyFile: string;
}

export class KubeApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface KubeApi {
  get<T = unknown>(path: string): Promise<T>;
  /** GET that answers undefined for 404 instead of failing. */
  find<T = unknown>(path: string): Promise<T | undefined>;
  request<T = unknown>(method: string, path: string, body?: unknown, contentType?: string): Promise<T>;
  /**
   * Watches a collection (`path` without `watch=1`): calls `onEvent` for each event as it arrives, with
   * the local time it arrived (performance.now()). Ends when `signal` aborts or the server closes.
   */
  watch<T = unknown>(path: string, onEvent: (type: string, object: T, at: number) => void, signal: AbortSignal): Promise<void>;
}

export function kubeApi(creds: KubeApiCredentials, timeoutMs = 15_000): KubeApi {
  const ca = readFileSync(creds.caFile);
  const cert = readFileSync(creds.certFile);
  const key = readFileSync(creds.keyFile);
  const base = new URL(creds.server);
  const call = <T>(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<T> =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
      const req = request(
        {
          host: base.hostname,
          port: base.port,
          path,
          method,
          ca,
          cert,
          key,
          timeout: timeoutMs,
          headers: { accept: 'application/json', ...(payload ? { 'content-type': contentType, 'content-length': payload.length } : {}) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300) {
              try {
                resolve(JSON.parse(text) as T);
              } catch {
                reject(new Error(`${method} ${path}: not JSON: ${text.slice(0, 200)}`));
              }
            } else reject(new KubeApiError(status, `${method} ${path}: HTTP ${status} ${text.slice(0, 500)}`));
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(payload);
    });
  const watch = <T>(path: string, onEvent: (type: string, object: T, at: number) => void, signal: AbortSignal): Promise<void> =>
    new Promise((resolve, reject) => {
      const sep = path.includes('?') ? '&' : '?';
      const req = request({ host: base.hostname, port: base.port, path: `${path}${sep}watch=1`, method: 'GET', ca, cert, key, signal }, (res) => {
        if (res.statusCode !== 200) {
          reject(new KubeApiError(res.statusCode ?? 0, `watch ${path}: HTTP ${res.statusCode}`));
          res.resume();
          return;
        }
        let pending = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const at = performance.now();
          pending += chunk;
          for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n')) {
            const line = pending.slice(0, nl);
            pending = pending.slice(nl + 1);
            if (!line.trim()) continue;
            const event = JSON.parse(line) as { type: string; object: T };
            onEvent(event.type, event.object, at);
          }
        });
        res.on('end', () => resolve());
        res.on('error', (err) => (signal.aborted ? resolve() : reject(err)));
      });
      req.on('error', (err) => (signal.aborted ? resolve() : reject(err)));
      req.end();
    });
  return {
    watch,
    get: (path) => call('GET', path),
    find: (path) =>
      call<never>('GET', path).catch((err: unknown) => {
        if (err instanceof KubeApiError && err.status === 404) return undefined;
        throw err;
      }),
    request: call,
  };
}
