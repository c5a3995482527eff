// Liveness and readiness for orchestrators (Kubernetes probes, load balancers), answered by the fetch
// handler itself so every runtime has them. Liveness says the process answers; readiness asks the
// embedder's check, if any. Neither is ever cached.

export interface HealthOptions {
  /** Liveness path. Default `/healthz`. */
  livenessPath?: string;
  /** Readiness path. Default `/readyz`. */
  readinessPath?: string;
  /** Whether this instance should get traffic (a database reachable, a drain not begun). Default: always. */
  ready?: () => boolean | Promise<boolean>;
}

type HealthCheck = (request: Request, pathname: string) => Response | Promise<Response> | null;

const headers = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' };

function status(request: Request, code: number, body: string): Response {
  return new Response(request.method === 'HEAD' ? null : body, { status: code, headers });
}

/** The probe answering `request`, or null when it is not a probe path. */
export function createHealthChecks(options: HealthOptions | boolean | undefined): HealthCheck | null {
  if (!options) return null;
  const settings = options === true ? {} : options;
  const liveness = settings.livenessPath ?? '/healthz';
  const readiness = settings.readinessPath ?? '/readyz';
  for (const [name, path] of [
    ['livenessPath', liveness],
    ['readinessPath', readiness],
  ]) {
    if (!path.startsWith('/')) throw new TypeError(`createGraphQLHandler: health.${name} must start with "/" (got "${path}")`);
  }
  const ready = settings.ready;
  return (request, pathname) => {
    if (pathname !== liveness && pathname !== readiness) return null;
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      return new Response(null, { status: 405, headers: { allow: 'GET, HEAD', 'cache-control': 'no-store' } });
    }
    if (pathname === liveness || !ready) return status(request, 200, '{"status":"ok"}');
    const answer = (ok: boolean) => (ok ? status(request, 200, '{"status":"ok"}') : status(request, 503, '{"status":"unavailable"}'));
    try {
      const verdict = ready();
      return verdict instanceof Promise ? verdict.then(answer, () => answer(false)) : answer(verdict);
    } catch {
      return answer(false);
    }
  };
}
