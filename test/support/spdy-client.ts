// A minimal SPDY/3.1 remotecommand client for the protocol versions no packaged client offers any
// more (kubectl and crictl negotiate v4): it upgrades with a chosen X-Stream-Protocol-Version (or
// none, as pre-negotiation clients did), opens the streams client-go would open and collects what
// comes back on each. Framing reuses skiffd's framer, which the kubectl tests check against
// client-go's own SPDY implementation.
import { connect } from 'node:net';
import { FrameReader, FrameType, FLAG_FIN, HeaderCodec, dataFrame } from '../../node/skiffd/streaming/spdy/framer.ts';

export interface SpdyClientResult {
  status: number;
  negotiated: string | undefined;
  streams: Record<string, string>;
}

function synStream(id: number, headerBlock: Buffer, fin: boolean): Buffer {
  const body = Buffer.alloc(10);
  body.writeUInt32BE(id, 0);
  const head = Buffer.alloc(8);
  head.writeUInt32BE((0x80000000 | (3 << 16) | FrameType.SYN_STREAM) >>> 0, 0);
  head.writeUInt32BE((((fin ? FLAG_FIN : 0) << 24) | (body.length + headerBlock.length)) >>> 0, 4);
  return Buffer.concat([head, body, headerBlock]);
}

/**
 * Opens `streamTypes` in order (error first, as client-go does), sends `stdin` then FIN on the stdin
 * stream (if opened), and resolves once the server closes the connection.
 */
export function spdyRemoteCommand(
  url: string,
  options: { protocols: string[]; streamTypes: string[]; stdin?: string; resize?: { Width: number; Height: number }; timeoutMs?: number },
): Promise<SpdyClientResult> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(target.port), target.hostname);
    const codec = new HeaderCodec();
    const reader = new FrameReader();
    const ids = new Map<number, string>();
    const received: Record<string, Buffer[]> = {};
    let head = Buffer.alloc(0);
    let upgraded = false;
    let status = 0;
    let negotiated: string | undefined;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`SPDY session did not end within ${options.timeoutMs ?? 15_000} ms; got ${JSON.stringify(received)}`));
    }, options.timeoutMs ?? 15_000);
    const finish = () => {
      clearTimeout(timer);
      codec.close();
      const streams: Record<string, string> = {};
      for (const [type, chunks] of Object.entries(received)) streams[type] = Buffer.concat(chunks).toString();
      resolve({ status, negotiated, streams });
    };
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.on('close', finish);
    socket.on('connect', () => {
      const lines = [
        `POST ${target.pathname} HTTP/1.1`,
        `Host: ${target.host}`,
        'Connection: Upgrade',
        'Upgrade: SPDY/3.1',
        ...options.protocols.map((p) => `X-Stream-Protocol-Version: ${p}`),
      ];
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    });
    socket.on('data', (chunk: Buffer) => {
      if (!upgraded) {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        const text = head.subarray(0, end).toString();
        status = Number(text.split(' ')[1]);
        negotiated = /x-stream-protocol-version: *(\S+)/i.exec(text)?.[1];
        if (status !== 101) {
          socket.destroy();
          return;
        }
        upgraded = true;
        chunk = head.subarray(end + 4);
        void openStreams();
        if (chunk.length === 0) return;
      }
      for (const frame of reader.push(chunk)) {
        if (frame.kind === 'data') {
          const type = ids.get(frame.streamId);
          if (type) (received[type] ??= []).push(frame.data);
        } else if (frame.type === FrameType.SYN_REPLY) {
          void codec.decode(frame.body.subarray(4));
        }
      }
    });
    const openStreams = async () => {
      let id = 1;
      const opened = new Map<string, number>();
      for (const type of options.streamTypes) {
        const block = await codec.encode({ streamtype: [type] });
        ids.set(id, type);
        opened.set(type, id);
        socket.write(synStream(id, block, false));
        id += 2;
      }
      const stdinId = opened.get('stdin');
      if (stdinId !== undefined) {
        if (options.stdin) socket.write(dataFrame(stdinId, Buffer.from(options.stdin), false));
        socket.write(dataFrame(stdinId, Buffer.alloc(0), true));
      }
      const resizeId = opened.get('resize');
      if (resizeId !== undefined && options.resize) socket.write(dataFrame(resizeId, Buffer.from(JSON.stringify(options.resize)), false));
    };
  });
}
