// The Kubernetes SPDY upgrade: the client asks for `Upgrade: SPDY/3.1` and lists the stream
// protocols it speaks in `X-Stream-Protocol-Version` (one header per protocol, or comma-joined);
// the server picks the first one it also speaks and answers 101 naming it.
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

export const STREAM_PROTOCOL_HEADER = 'x-stream-protocol-version';

export function isSpdyUpgrade(req: IncomingMessage): boolean {
  return (req.headers.upgrade ?? '')
    .toLowerCase()
    .split(',')
    .some((p) => p.trim() === 'spdy/3.1');
}

/** Protocols the client offered, in its order of preference. */
export function offeredProtocols(req: IncomingMessage): string[] {
  const out: string[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    if (req.rawHeaders[i].toLowerCase() !== STREAM_PROTOCOL_HEADER) continue;
    for (const p of req.rawHeaders[i + 1].split(',')) if (p.trim()) out.push(p.trim());
  }
  return out;
}

/**
 * The protocol to use: the client's first that we support. A client that offers none gets
 * `fallback` (pre-negotiation clients speak the oldest protocol), or undefined when there is none.
 */
export function negotiate(offered: string[], supported: readonly string[], fallback?: string): string | undefined {
  if (offered.length === 0) return fallback;
  return offered.find((p) => supported.includes(p));
}

export function writeSpdySwitch(socket: Socket, protocol: string | undefined): void {
  const lines = ['HTTP/1.1 101 Switching Protocols', 'Connection: Upgrade', 'Upgrade: SPDY/3.1'];
  if (protocol) lines.push(`X-Stream-Protocol-Version: ${protocol}`);
  socket.write(`${lines.join('\r\n')}\r\n\r\n`);
}

export function writeHttpError(socket: Socket, status: number, reason: string, message: string, extraHeaders: string[] = []): void {
  const body = `${message}\n`;
  socket.end(
    [
      `HTTP/1.1 ${status} ${reason}`,
      'Content-Type: text/plain; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`,
      'Connection: close',
      ...extraHeaders,
      '',
      body,
    ].join('\r\n'),
  );
}
