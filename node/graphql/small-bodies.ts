// Small POST bodies read by the Node server itself, before the request reaches Hono and the handler.
// A GraphQL POST is a few hundred bytes that arrive with the headers; read through the web Request,
// each one costs promise turns, and a handler that has to wait makes @hono/node-server take its
// asynchronous response path (a close listener and an awaited write per request). With the body in
// hand the handler answers at once (`GraphQLFetchHandler.fetch(request, body)`), and the response is
// written as a cached one. The bytes also stay on the request as `rawBody`, where @hono/node-server's
// Request reads them, so any other route still gets its body.
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Bodies up to this size are read ahead; larger ones (and those without a length) stream as before. */
const MAX_BYTES = 64 * 1024;

const bodyKey = Symbol('skiff.body');

interface ReadAhead extends IncomingMessage {
  rawBody?: Buffer;
  [bodyKey]?: string;
}

type Listener = (incoming: IncomingMessage, outgoing: ServerResponse) => unknown;

/** Wraps a request listener so that small POST bodies are read before it runs. */
export function readingSmallBodies(listener: Listener): Listener {
  return (incoming, outgoing) => {
    const length = incoming.headers['content-length'];
    if (incoming.method !== 'POST' || length === undefined || incoming.headers['transfer-encoding'] !== undefined || !(Number(length) <= MAX_BYTES)) {
      return listener(incoming, outgoing);
    }
    const chunks: Buffer[] = [];
    let done = false;
    const finish = (complete: boolean) => {
      if (done) return;
      done = true;
      incoming.off('data', onData);
      if (complete) {
        const raw = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
        (incoming as ReadAhead).rawBody = raw;
        (incoming as ReadAhead)[bodyKey] = raw.toString('utf8');
      }
      // An incomplete body (the client went away) goes on unread: the handler reports the failed read.
      listener(incoming, outgoing);
    };
    const onData = (chunk: Buffer) => chunks.push(chunk);
    incoming.on('data', onData);
    incoming.once('end', () => finish(true));
    incoming.once('error', () => finish(false));
    incoming.once('close', () => finish(incoming.complete));
  };
}

/** The body read ahead for the request in `env` (@hono/node-server's `{ incoming }`), if any. */
export function smallBody(env: { incoming?: IncomingMessage } | undefined): string | undefined {
  return (env?.incoming as ReadAhead | undefined)?.[bodyKey];
}
