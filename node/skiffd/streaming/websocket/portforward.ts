// Port forwarding over WebSocket: the ports come from the URL query (`?port=80&port=8080`), port i
// gets data channel 2i and error channel 2i+1, and the server's first message on each of them is
// the port number as two little-endian bytes. One TCP connection per port per WebSocket.
import { Duplex } from 'node:stream';
import type { PortForwardStreamRequest } from '../requests.ts';
import { forwardErrorMessage, parsePort, type PortForwardBackend } from '../portforward.ts';
import type { ChannelSocket } from './channels.ts';

export const WS_PORTFORWARD_PROTOCOLS: readonly string[] = ['v4.channel.k8s.io', 'portforward.k8s.io', 'v4.base64.channel.k8s.io'];

/** Ports named in the query; an invalid one is an error for the client to fix. */
export function queryPorts(url: URL): number[] {
  const out: number[] = [];
  for (const raw of [...url.searchParams.getAll('port'), ...url.searchParams.getAll('ports')]) {
    for (const part of raw.split(',')) {
      const port = parsePort(part);
      if (port === undefined) throw new Error(`invalid port ${JSON.stringify(part)} in the URL query: expected 1-65535`);
      out.push(port);
    }
  }
  return out;
}

export async function serveWebSocketPortForward(
  channels: ChannelSocket,
  request: PortForwardStreamRequest,
  ports: number[],
  backend: PortForwardBackend,
): Promise<void> {
  const abort = new AbortController();
  channels.ws.on('close', () => abort.abort());

  // Back-pressure: a port whose reader is full stops the WebSocket (all ports share it) until every
  // full one has been read again; the client's TCP window closes meanwhile.
  const full = new Set<number>();
  const runs = ports.map((port, i) => {
    const dataChannel = 2 * i;
    const errorChannel = 2 * i + 1;
    const portBytes = Buffer.alloc(2);
    portBytes.writeUInt16LE(port);
    channels.send(dataChannel, portBytes);
    channels.send(errorChannel, portBytes);

    const data = new Duplex({
      read() {
        if (full.delete(i) && full.size === 0) channels.ws.resume();
      },
      write(chunk: Buffer, _enc, cb) {
        channels.send(dataChannel, chunk, (err) => cb(channels.open ? err : undefined));
      },
    });
    channels.onData(dataChannel, (chunk) => {
      if (!data.push(chunk) && !full.has(i)) {
        full.add(i);
        channels.ws.pause();
      }
    });
    channels.ws.on('close', () => data.push(null));
    return backend.portForward(request.podSandboxId, port, data, abort.signal).catch((err: unknown) => {
      if (channels.open) channels.send(errorChannel, forwardErrorMessage(port, request.podSandboxId, err));
    });
  });
  await Promise.all(runs);
  channels.close(1000);
}
