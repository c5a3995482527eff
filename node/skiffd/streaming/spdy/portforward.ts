// Port forwarding over SPDY (`portforward.k8s.io`): for every forwarded connection the client opens
// an error stream and a data stream carrying the same `requestID` and `port` headers.
import type { PortForwardStreamRequest } from '../requests.ts';
import { forwardErrorMessage, parsePort, type PortForwardBackend } from '../portforward.ts';
import { STREAM_CREATION_TIMEOUT_MS } from './remotecommand.ts';
import type { SpdySession, SpdyStream } from './session.ts';

export const PORTFORWARD_PROTOCOL = 'portforward.k8s.io';
/** The same session tunnelled through WebSocket binary messages (kubectl 1.31 and later). */
export const PORTFORWARD_TUNNEL_PROTOCOL = 'SPDY/3.1+portforward.k8s.io';

interface Pair {
  data?: SpdyStream;
  error?: SpdyStream;
  timer: NodeJS.Timeout;
}

/** Older clients send no requestID: then consecutive streams (error, data) form a pair. */
function requestIdOf(stream: SpdyStream): string {
  const given = stream.header('requestid');
  if (given) return given;
  return String(stream.header('streamtype') === 'data' ? stream.id - 2 : stream.id);
}

export function serveSpdyPortForward(session: SpdySession, request: PortForwardStreamRequest, backend: PortForwardBackend): void {
  const pairs = new Map<string, Pair>();
  const abort = new AbortController();
  session.on('close', () => {
    abort.abort();
    for (const p of pairs.values()) clearTimeout(p.timer);
  });

  session.on('stream', (stream) => {
    stream.on('error', () => {});
    const type = stream.header('streamtype');
    if (type !== 'data' && type !== 'error') {
      stream.destroy();
      return;
    }
    const id = requestIdOf(stream);
    let pair = pairs.get(id);
    if (!pair) {
      // A pair that never completes is dropped after the creation timeout.
      const timer = setTimeout(() => {
        const p = pairs.get(id);
        pairs.delete(id);
        p?.data?.destroy();
        p?.error?.destroy();
      }, STREAM_CREATION_TIMEOUT_MS);
      timer.unref();
      pair = { timer };
      pairs.set(id, pair);
    }
    if (pair[type]) {
      stream.destroy(); // a second stream of the same kind for one request
      return;
    }
    pair[type] = stream;
    if (pair.data && pair.error) {
      clearTimeout(pair.timer);
      pairs.delete(id);
      void forward(session, request, backend, pair.data, pair.error, abort.signal);
    }
  });
}

async function forward(
  session: SpdySession,
  request: PortForwardStreamRequest,
  backend: PortForwardBackend,
  data: SpdyStream,
  error: SpdyStream,
  signal: AbortSignal,
): Promise<void> {
  error.resume(); // the client only FINs it
  const portText = data.header('port');
  const port = parsePort(portText);
  try {
    if (port === undefined) throw new Error(`invalid port header ${JSON.stringify(portText ?? '')}: expected 1-65535`);
    if (request.ports.length > 0 && !request.ports.includes(port))
      throw new Error(`port ${port} was not requested (PortForward asked for ${request.ports.join(', ')})`);
    await backend.portForward(request.podSandboxId, port, data, signal);
  } catch (err) {
    if (!error.destroyed && !session.isClosed) error.write(forwardErrorMessage(port ?? 0, request.podSandboxId, err));
  }
  if (!data.destroyed) data.end();
  if (!error.destroyed) error.end();
}
