// Small POST bodies read by the Node server itself, before the request reaches Hono and the handler.
// A GraphQL POST is a few hundred bytes that arrive with the headers; read through the web Request,
// each one costs promise turns, and a handler that has to wait makes @hono/node-server take its
// asynchronous response path (a close listener and an awaited write per request). With the body in
// hand the handler answers at once (`GraphQLFetchHandler.fetch(request, body)`), and the response is
// written as a cached one. The bytes also stay on the request as `rawBody`, where @hono/node-server's
// Request reads them, so any other route still gets its body.
//
// The listeners are module functions reading their state from the request: no closure is made per
// request (from sources, tsx names every closure it creates, which costs a property definition each).
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Bodies up to this size are read ahead; larger ones (and those without a length) stream as before. */
const MAX_BYTES = 64 * 1024;

const bodyKey = Symbol('skiff.body');
const readingKey = Symbol('skiff.reading');

type Listener = (incoming: IncomingMessage, outgoing: ServerResponse) => unknown;

/** A body being read: where its chunks go and who gets the request once it is complete. */
interface Reading {
  listener: Listener;
  outgoing: ServerResponse;
  chunks: Buffer[];
}

interface ReadAhead extends IncomingMessage {
  rawBody?: Buffer;
  [bodyKey]?: string;
  [readingKey]?: Reading;
}

/** Wraps a request listener so that small POST bodies are read before it runs. */
export function readingSmallBodies(listener: Listener): Listener {
  return (incoming, outgoing) => {
    const length = incoming.headers['content-length'];
    if (incoming.method !== 'POST' || length === undefined || incoming.headers['transfer-encoding'] !== undefined || !(Number(length) <= MAX_BYTES)) {
      return listener(incoming, outgoing);
    }
    (incoming as ReadAhead)[readingKey] = { listener, outgoing, chunks: [] };
    // Plain listeners, never removed: `finish` runs once, and the request goes with its listeners.
    incoming.on('data', onData);
    incoming.on('end', onEnd);
    incoming.on('error', onError);
    incoming.on('close', onClose);
  };
}

function onData(this: ReadAhead, chunk: Buffer): void {
  this[readingKey]?.chunks.push(chunk);
}

function onEnd(this: ReadAhead): void {
  finish(this, true);
}

function onError(this: ReadAhead): void {
  finish(this, false);
}

function onClose(this: ReadAhead): void {
  finish(this, this.complete);
}

function finish(incoming: ReadAhead, complete: boolean): void {
  const reading = incoming[readingKey];
  if (reading === undefined) return;
  incoming[readingKey] = undefined;
  if (complete) {
    const { chunks } = reading;
    const raw = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
    incoming.rawBody = raw;
    // Decoded as Request.text() decodes a body (the Encoding standard's UTF-8 decode): a leading
    // byte-order mark goes, so a body is read alike whatever its size.
    const bom = raw.length >= 3 && raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf;
    incoming[bodyKey] = raw.toString('utf8', bom ? 3 : 0);
  }
  // An incomplete body (the client went away) goes on unread: the handler reports the failed read.
  reading.listener(incoming, reading.outgoing);
}

/** The body read ahead for the request in `env` (@hono/node-server's `{ incoming }`), if any. */
export function smallBody(env: { incoming?: IncomingMessage } | undefined): string | undefined {
  return (env?.incoming as ReadAhead | undefined)?.[bodyKey];
}
