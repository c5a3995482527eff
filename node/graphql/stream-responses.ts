// Subscription streams (SSE, multipart) on the Node server, written straight to the response: the
// handler's web ReadableStream body would cost a promise and a chunk copy per frame per client, which
// a fan-out to thousands of streams feels. The handler's own bound, keep-alive and cleanup still apply
// (src/streams/stream-channel.ts); this only moves the bytes.
import type { ServerResponse } from 'node:http';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import { canDivertStream, divertStream } from '../../src/streams/stream-channel.ts';
import { corkAfterFirstWrite, type TurnWriter } from './turn-corking.ts';

/**
 * Writes `response` to `outgoing` itself when it is a subscription stream and answers Hono's marker
 * for a response already sent; anything else comes back as it is.
 */
export function sendStreamDirectly(response: Response, outgoing: ServerResponse | undefined): Response {
  if (outgoing === undefined || outgoing.headersSent || outgoing.socket === null || !canDivertStream(response)) return response;
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  // No chunked encoding: the body runs to the end of the connection, so each frame is written as it
  // is, one shared buffer for every client of a fan-out, with no chunk header of its own.
  headers.connection = 'close';
  outgoing.removeHeader('transfer-encoding');
  outgoing.writeHead(response.status, headers);
  outgoing.flushHeaders();
  // Frames go to the socket itself, corked for the rest of a turn after the first (turn-corking.ts).
  const socket = outgoing.socket!;
  const writer: TurnWriter = { sentInTurn: 0 };
  const diverted = divertStream(response, {
    write: (bytes) => {
      corkAfterFirstWrite(writer, socket);
      socket.write(bytes);
    },
    bufferedBytes: () => socket.writableLength,
    end: () => {
      outgoing.end();
    },
    destroy: () => {
      outgoing.destroy();
    },
  });
  // The client left, or the connection broke: end the subscription at once.
  outgoing.once('close', () => diverted?.onGone());
  return RESPONSE_ALREADY_SENT;
}
