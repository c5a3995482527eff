// Prometheus metrics for the Node server (opt-in): requests by operation type and status, their
// duration, document-cache hits and misses, open subscriptions, and prom-client's process metrics.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ResponseEvent } from '../../src/handler/options.ts';
import type { GraphQLWebSocketServer } from '../../src/subscriptions/graphql-ws-adapter.ts';

/** `none`: the request carried no operation (a 404, GraphiQL's page, a malformed body...). */
type OperationLabel = 'query' | 'mutation' | 'subscription' | 'none';

export interface ServerMetrics {
  /** Where the text is served. */
  readonly path: string;
  readonly registry: Registry;
  /**
   * Wraps a fetch function to time and count its requests. It stays synchronous when the function
   * answers synchronously, so @hono/node-server keeps its fast path for ready responses.
   */
  wrap(fetch: (request: Request, body?: string) => Response | Promise<Response>): (request: Request, body?: string) => Response | Promise<Response>;
  /** The answer to a scrape. */
  scrape(): Promise<Response>;
  /** Give this to the GraphQL handler's `onResponse` (with any other observer). */
  onResponse: (event: ResponseEvent) => void;
  /** Counts the open subscriptions of `server` (read at each scrape; no hook, so sharing stays on). */
  observeSubscriptions(server: Pick<GraphQLWebSocketServer, 'subscriptionStats'>): void;
}

export interface MetricsOptions {
  /** Default `/metrics`. */
  path?: string;
  /** Also export prom-client's process and Node.js metrics (CPU, memory, event loop lag). Default true. */
  processMetrics?: boolean;
}

// From half a millisecond (a cached query) to several seconds.
const durationBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

export function createMetrics(options: MetricsOptions = {}): ServerMetrics {
  const path = options.path ?? '/metrics';
  const registry = new Registry();
  if (options.processMetrics !== false) collectDefaultMetrics({ register: registry });
  const requests = new Counter({
    name: 'graphql_http_requests_total',
    help: 'HTTP requests answered, by GraphQL operation type and HTTP status',
    labelNames: ['operation_type', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'graphql_http_request_duration_seconds',
    help: 'Time from a request reaching the server to its response being ready, by GraphQL operation type',
    labelNames: ['operation_type'] as const,
    buckets: durationBuckets,
    registers: [registry],
  });
  const documentCache = new Counter({
    name: 'graphql_document_cache_requests_total',
    help: 'Requests whose query was (hit) or was not (miss) already parsed and validated in the document cache',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  const observed: Pick<GraphQLWebSocketServer, 'subscriptionStats'>[] = [];
  new Gauge({
    name: 'graphql_subscriptions_open',
    help: 'Subscriptions currently streaming, over WebSocket, server-sent events and multipart HTTP',
    registers: [registry],
    collect() {
      this.set(observed.reduce((sum, server) => sum + server.subscriptionStats().open, 0));
    },
  });

  const operations = new WeakMap<Request, OperationLabel>();
  // Per graphql-ws connection context: ids of its operations counted as open subscriptions.

  // Bound children per label set: prom-client would otherwise hash the labels on every call.
  const counted = new Map<string, Counter.Internal>();
  const timed = new Map<string, Histogram.Internal<'operation_type'>>();
  const record = (request: Request, status: number, start: number): void => {
    const operation = operations.get(request) ?? 'none';
    const key = `${operation} ${status}`;
    let counter = counted.get(key);
    if (counter === undefined) counted.set(key, (counter = requests.labels(operation, String(status))));
    counter.inc();
    let histogram = timed.get(operation);
    if (histogram === undefined) timed.set(operation, (histogram = duration.labels(operation)));
    histogram.observe((performance.now() - start) / 1000);
  };
  const hits = documentCache.labels('hit');
  const misses = documentCache.labels('miss');

  return {
    path,
    registry,
    wrap(fetch) {
      return (request, body) => {
        const start = performance.now();
        let answer: Response | Promise<Response>;
        try {
          answer = fetch(request, body);
        } catch (error) {
          record(request, 500, start);
          throw error;
        }
        if (answer instanceof Response) {
          record(request, answer.status, start);
          return answer;
        }
        return answer.then(
          (response) => {
            record(request, response.status, start);
            return response;
          },
          (error: unknown) => {
            record(request, 500, start);
            throw error;
          },
        );
      };
    },
    async scrape() {
      return new Response(await registry.metrics(), { headers: { 'content-type': registry.contentType, 'cache-control': 'no-store' } });
    },
    onResponse(event) {
      if (event.operationType !== null) operations.set(event.request, event.operationType);
      if (event.documentCacheHit !== null) (event.documentCacheHit ? hits : misses).inc();
    },
    observeSubscriptions(server) {
      observed.push(server);
    },
  };
}
