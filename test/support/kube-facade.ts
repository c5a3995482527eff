// A stand-in for kube-apiserver + kubelet in front of skiffd's streaming server, so that a real
// kubectl can exec, attach and port-forward: it answers the few API reads kubectl makes (discovery
// and GET pod) and turns each exec/attach/portforward upgrade into a CRI call (the hooks), then
// proxies the raw upgraded connection to the URL the runtime returned, as the kubelet's proxy does.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';

export interface FacadeContainer {
  name: string;
  tty?: boolean;
  stdin?: boolean;
  stdinOnce?: boolean;
}

export interface FacadePod {
  name: string;
  namespace?: string;
  containers: FacadeContainer[];
}

export interface StreamOptions {
  pod: string;
  container: string;
  command: string[];
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
  tty: boolean;
}

export interface FacadeHooks {
  /** Returns the URL from the runtime's Exec RPC. */
  exec(o: StreamOptions): Promise<string>;
  attach(o: StreamOptions): Promise<string>;
  /** `ports` is what the client put in the query (WebSocket clients); SPDY clients name ports per stream. */
  portForward(o: { pod: string; ports: number[] }): Promise<string>;
}

/** One proxied upgrade, so tests can check which transport a client really used. */
export interface ProxiedUpgrade {
  kind: string;
  upgrade: string;
  protocols: string;
}

export interface KubeFacade {
  url: string;
  upgrades: ProxiedUpgrade[];
  close(): Promise<void>;
}

const bool = (q: URLSearchParams, name: string) => ['true', '1'].includes((q.get(name) ?? '').toLowerCase());

export async function startKubeFacade(pods: FacadePod[], hooks: FacadeHooks): Promise<KubeFacade> {
  const upgrades: ProxiedUpgrade[] = [];
  const sockets = new Set<Socket>();
  const json = (res: import('node:http').ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const podJson = (p: FacadePod) => ({
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: { name: p.name, namespace: p.namespace ?? 'default', uid: `uid-${p.name}` },
    spec: { containers: p.containers.map((c) => ({ name: c.name, image: 'busybox', tty: !!c.tty, stdin: !!c.stdin, stdinOnce: !!c.stdinOnce })) },
    status: { phase: 'Running', containerStatuses: p.containers.map((c) => ({ name: c.name, ready: true, started: true, state: { running: {} } })) },
  });

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://facade');
    if (url.pathname === '/api') return json(res, 200, { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] });
    if (url.pathname === '/apis') return json(res, 200, { kind: 'APIGroupList', apiVersion: 'v1', groups: [] });
    if (url.pathname === '/api/v1')
      return json(res, 200, {
        kind: 'APIResourceList',
        groupVersion: 'v1',
        resources: [
          { name: 'pods', singularName: 'pod', namespaced: true, kind: 'Pod', verbs: ['get', 'list'], shortNames: ['po'] },
          { name: 'pods/exec', singularName: '', namespaced: true, kind: 'PodExecOptions', verbs: ['create', 'get'] },
          { name: 'pods/attach', singularName: '', namespaced: true, kind: 'PodAttachOptions', verbs: ['create', 'get'] },
          { name: 'pods/portforward', singularName: '', namespaced: true, kind: 'PodPortForwardOptions', verbs: ['create', 'get'] },
        ],
      });
    if (url.pathname === '/version') return json(res, 200, { major: '1', minor: '32', gitVersion: 'v1.32.0-facade' });
    const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)$/.exec(url.pathname);
    const pod = m && pods.find((p) => p.name === m[2]);
    if (pod) return json(res, 200, podJson(pod));
    json(res, 404, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: `${url.pathname} not found`, reason: 'NotFound', code: 404 });
  });

  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });

  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    socket.on('error', () => {});
    const url = new URL(req.url ?? '/', 'http://facade');
    const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/(exec|attach|portforward)$/.exec(url.pathname);
    if (!m) {
      socket.end('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      return;
    }
    const [, , podName, kind] = m;
    const q = url.searchParams;
    upgrades.push({
      kind,
      upgrade: String(req.headers.upgrade ?? ''),
      protocols: String(req.headers['sec-websocket-protocol'] ?? req.headers['x-stream-protocol-version'] ?? ''),
    });
    const options: StreamOptions = {
      pod: podName,
      container: q.get('container') ?? pods.find((p) => p.name === podName)?.containers[0]?.name ?? '',
      command: q.getAll('command'),
      stdin: bool(q, 'stdin'),
      stdout: bool(q, 'stdout'),
      stderr: bool(q, 'stderr'),
      tty: bool(q, 'tty'),
    };
    if (options.tty) options.stderr = false;
    const target =
      kind === 'exec'
        ? hooks.exec(options)
        : kind === 'attach'
          ? hooks.attach(options)
          : hooks.portForward({
              pod: podName,
              ports: q
                .getAll('ports')
                .flatMap((p) => p.split(','))
                .filter(Boolean)
                .map(Number),
            });
    target.then(
      (runtimeUrl) => proxy(req, socket, head, new URL(runtimeUrl), url.search),
      (err: Error) => {
        const body = JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: err.message, code: 500 });
        socket.end(
          `HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
      },
    );
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address() as import('node:net').AddressInfo;
  return {
    url: `http://127.0.0.1:${addr.port}`,
    upgrades,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Replays the client's upgrade request to the runtime's URL and splices the two connections. */
function proxy(req: IncomingMessage, client: Socket, head: Buffer, target: URL, clientQuery: string): void {
  const upstream = connect(Number(target.port), target.hostname.replace(/^\[|\]$/g, ''));
  upstream.on('error', () => client.destroy());
  client.on('error', () => upstream.destroy());
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => client.destroy());
  upstream.on('connect', () => {
    // WebSocket port-forward names its ports in the query; keep the client's query on the runtime URL.
    const path = `${target.pathname}${target.search || (req.headers.upgrade?.toLowerCase() === 'websocket' ? clientQuery : '')}`;
    const lines = [`${req.method} ${path} HTTP/1.1`];
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i];
      if (name.toLowerCase() === 'host') lines.push(`Host: ${target.host}`);
      else if (name.toLowerCase() !== 'authorization') lines.push(`${name}: ${req.rawHeaders[i + 1]}`);
    }
    upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (head.length > 0) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  });
}
