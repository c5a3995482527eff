// An HTTP proxy in front of a test registry that can stall or cut one blob mid-download: it forwards
// the first bytes, then holds the rest until released (or drops the connection once). Tests use it to
// kill skiffd in the middle of a pull, or to see a broken download retried.
import http from 'node:http';

export interface HoldingProxy {
  host: string;
  /** Resolves once a held (or cut) blob's first bytes went out. */
  held: Promise<void>;
  /** Lets held and future downloads run freely. */
  release(): void;
  stop(): Promise<void>;
}

/**
 * mode "hold": stall the blob after `firstBytes` until release(); mode "break-once": cut the first
 * download of the blob after `firstBytes` (later downloads pass).
 */
export async function startHoldingProxy(
  target: string,
  holdDigest: string,
  firstBytes = 64 * 1024,
  mode: 'hold' | 'break-once' = 'hold',
): Promise<HoldingProxy> {
  let holding = true;
  const waiters: (() => void)[] = [];
  let onHeld!: () => void;
  const held = new Promise<void>((resolve) => (onHeld = resolve));
  const server = http.createServer((req, res) => {
    const upstream = http.request(new URL(req.url ?? '/', target), { method: req.method, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      const hold = holding && req.method === 'GET' && new URL(req.url ?? '/', 'http://proxy').pathname.endsWith(`/blobs/${holdDigest}`);
      if (!hold) {
        up.pipe(res);
        return;
      }
      let sent = 0;
      up.on('data', (chunk: Buffer) => {
        if (sent >= firstBytes && holding && mode === 'break-once') {
          holding = false;
          onHeld();
          up.destroy();
          res.destroy();
          return;
        }
        if (sent >= firstBytes && holding) {
          up.pause();
          onHeld();
          waiters.push(() => up.resume());
          return;
        }
        sent += chunk.length;
        res.write(chunk);
      });
      up.on('end', () => res.end());
    });
    upstream.on('error', () => res.destroy());
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    host: `127.0.0.1:${port}`,
    held,
    release() {
      holding = false;
      for (const w of waiters.splice(0)) w();
    },
    stop: async () => {
      holding = false;
      for (const w of waiters.splice(0)) w();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
