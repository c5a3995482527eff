// Prometheus metrics, as containerd serves them from its [metrics] address: every CRI call by method
// and status code with its latency, pods and containers by state (counted at scrape time from the
// subsystems, so they never drift), image pulls and their bytes, and the process's own CPU and memory.
import { createServer, type Server } from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { ContainerState } from '../../proto/gen/runtime/v1/api.ts';
import type { Logger } from './logger.ts';
import type { ContainerManager } from './containers/manager.ts';
import type { PodSandboxes } from './pods/manager.ts';

/** What the gauges read: the pods and containers the daemon holds (absent before they open). */
type Sources = { pods: Pick<PodSandboxes, 'list'>; containers: Pick<ContainerManager, 'list'> };

export class DaemonMetrics {
  readonly registry = new Registry();
  private readonly calls: Counter<'method' | 'code'>;
  private readonly latency: Histogram<'method'>;
  private readonly pulls: Counter<'result'>;
  private readonly pullBytes: Counter;

  constructor(subsystems: () => Sources | undefined) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'skiffd_' });
    this.calls = new Counter({
      name: 'skiffd_grpc_requests_total',
      help: 'CRI calls answered, by method and gRPC status code',
      labelNames: ['method', 'code'],
      registers,
    });
    this.latency = new Histogram({
      name: 'skiffd_grpc_request_duration_seconds',
      help: 'Time to answer a CRI call, by method',
      labelNames: ['method'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.pulls = new Counter({ name: 'skiffd_image_pulls_total', help: 'PullImage calls, by result', labelNames: ['result'], registers });
    this.pullBytes = new Counter({ name: 'skiffd_image_pull_bytes_total', help: 'Compressed bytes of the images pulled', registers });
    new Gauge({
      name: 'skiffd_pods',
      help: 'Pod sandboxes, by state',
      labelNames: ['state'],
      registers,
      collect() {
        const pods = subsystems()?.pods.list() ?? [];
        this.reset();
        for (const state of ['SANDBOX_READY', 'SANDBOX_NOTREADY']) this.set({ state }, pods.filter((p) => p.state === state).length);
      },
    });
    new Gauge({
      name: 'skiffd_containers',
      help: 'Containers, by state',
      labelNames: ['state'],
      registers,
      async collect() {
        const views = (await subsystems()?.containers.list()) ?? [];
        this.reset();
        for (const state of [ContainerState.CONTAINER_CREATED, ContainerState.CONTAINER_RUNNING, ContainerState.CONTAINER_EXITED]) {
          this.set({ state: ContainerState[state] }, views.filter((v) => v.state === state).length);
        }
      },
    });
  }

  /** One answered call: `method` is the full gRPC path, `code` the status name (OK for success). */
  call(method: string, code: string, seconds: number): void {
    const short = method.slice(method.lastIndexOf('/') + 1);
    this.calls.inc({ method: short, code });
    this.latency.observe({ method: short }, seconds);
  }

  pulled(result: 'ok' | 'error', bytes = 0): void {
    this.pulls.inc({ result });
    if (bytes > 0) this.pullBytes.inc(bytes);
  }
}

/** Serves GET /metrics on host:port (the config's metrics.address). */
export async function serveMetrics(metrics: DaemonMetrics, address: { host: string; port: number }, log: Logger): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: metrics are at GET /metrics\n');
      return;
    }
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      (err: Error) => {
        log.warn('metrics collection failed', { err: err.message });
        res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics collection failed: ${err.message}\n`);
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address();
  log.info('metrics listening', {
    url: `http://${address.host.includes(':') ? `[${address.host}]` : address.host}:${typeof bound === 'object' && bound ? bound.port : address.port}/metrics`,
  });
  return server;
}
