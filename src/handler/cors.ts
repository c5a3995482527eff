/**
 * CORS for browsers on other origins. Off unless configured: without `cors` the endpoint sends no
 * CORS headers, so browsers only let pages of its own origin read it.
 */
export interface CorsOptions {
  /** Origins allowed to read responses: exact values such as `https://app.example`, or a predicate. */
  origin: readonly string[] | ((origin: string) => boolean);
  /** Send `Access-Control-Allow-Credentials: true` (cookies, HTTP auth). Default false. */
  credentials?: boolean;
  /** Seconds a browser may cache a preflight answer. Default 600. */
  maxAge?: number;
  /** Request headers a page may send. Default `content-type`, `accept`, `authorization`. */
  allowHeaders?: readonly string[];
  /** Response headers a page may read besides the safelisted ones. Default none. */
  exposeHeaders?: readonly string[];
}

export interface Cors {
  /** The answer to a preflight (OPTIONS with Access-Control-Request-Method), or null for other requests. */
  preflight(request: Request): Response | null;
  /** Adds the CORS headers a response to `request` needs (none for a disallowed origin; Vary is the caller's). */
  apply(request: Request, headers: Record<string, string>): void;
}

const defaultAllowHeaders = ['content-type', 'accept', 'authorization'];
const allowMethods = 'GET, POST, OPTIONS';

export function createCors(options: CorsOptions): Cors {
  const { origin } = options;
  let allowed: (origin: string) => boolean;
  if (typeof origin === 'function') allowed = origin;
  else if (Array.isArray(origin)) {
    for (const value of origin) {
      if (typeof value !== 'string' || value === '*' || value.endsWith('/')) {
        throw new TypeError(`createGraphQLHandler: cors.origin entries must be origins like "https://app.example" (got ${JSON.stringify(value)})`);
      }
    }
    const origins = new Set(origin);
    allowed = (value) => origins.has(value);
  } else {
    throw new TypeError('createGraphQLHandler: cors.origin must be a list of origins or a function (origin) => boolean');
  }
  const maxAge = options.maxAge ?? 600;
  if (!Number.isSafeInteger(maxAge) || maxAge < 0) {
    throw new TypeError(`createGraphQLHandler: cors.maxAge must be a non-negative integer of seconds (got ${maxAge})`);
  }
  const allowHeaders = (options.allowHeaders ?? defaultAllowHeaders).map((h) => h.toLowerCase());
  const allowHeadersSet = new Set(allowHeaders);
  const exposeHeaders = options.exposeHeaders?.length ? options.exposeHeaders.join(', ') : null;
  const credentials = options.credentials === true;

  const allowOrigin = (request: Request): string | null => {
    const value = request.headers.get('origin');
    if (value === null) return null;
    try {
      return allowed(value) ? value : null;
    } catch {
      return null;
    }
  };

  return {
    preflight(request) {
      if (request.method !== 'OPTIONS') return null;
      const method = request.headers.get('access-control-request-method');
      if (method === null) return null; // a plain OPTIONS: the handler answers 405 as before
      const headers = new Headers({ vary: 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers' });
      const origin = allowOrigin(request);
      if (origin === null) {
        headers.set('content-type', 'text/plain; charset=utf-8');
        return new Response(`Origin ${request.headers.get('origin') ?? '(none)'} is not allowed to call this endpoint`, {
          status: 403,
          headers,
        });
      }
      if (method !== 'GET' && method !== 'POST') {
        headers.set('content-type', 'text/plain; charset=utf-8');
        return new Response(`Method ${method} is not allowed: use GET or POST`, { status: 403, headers });
      }
      const requested = (request.headers.get('access-control-request-headers') ?? '')
        .split(',')
        .map((h) => h.trim().toLowerCase())
        .filter((h) => h !== '');
      const refused = requested.filter((h) => !allowHeadersSet.has(h));
      if (refused.length > 0) {
        headers.set('content-type', 'text/plain; charset=utf-8');
        return new Response(`Request header(s) ${refused.join(', ')} are not allowed: allowed are ${allowHeaders.join(', ')}`, {
          status: 403,
          headers,
        });
      }
      headers.set('access-control-allow-origin', origin);
      headers.set('access-control-allow-methods', allowMethods);
      if (allowHeaders.length > 0) headers.set('access-control-allow-headers', allowHeaders.join(', '));
      headers.set('access-control-max-age', String(maxAge));
      if (credentials) headers.set('access-control-allow-credentials', 'true');
      return new Response(null, { status: 204, headers });
    },

    apply(request, headers) {
      const origin = allowOrigin(request);
      if (origin === null) return;
      headers['access-control-allow-origin'] = origin;
      if (credentials) headers['access-control-allow-credentials'] = 'true';
      if (exposeHeaders !== null) headers['access-control-expose-headers'] = exposeHeaders;
    },
  };
}
