/** Reading a POST body under a size limit, without wrapping it in another stream. */

export type BodyRead = { ok: true; text: string } | { ok: false; status: 400 | 413; message: string };

/**
 * Reads the whole body as UTF-8 text and hands the outcome to `onRead` (a failed read to `onError`).
 * A declared Content-Length over the limit is refused before anything is read; with a length,
 * `text()` is used as is (fast on every runtime, and on @hono/node-server it skips building a stream
 * at all) and the continuation is attached straight to its promise, since on the hot path every
 * promise turn counts; without one, the body's own stream is read chunk by chunk and abandoned as
 * soon as the limit is crossed.
 */
export function readBodyThen<T>(
  request: Request,
  maxBytes: number,
  onRead: (read: BodyRead) => T | PromiseLike<T>,
  onError: (error: unknown) => T | PromiseLike<T>,
): Promise<T> {
  let declared: string | null;
  try {
    declared = request.headers.get('content-length');
    if (declared === null) return readStream(request, maxBytes).then(onRead, onError);
  } catch (error) {
    return Promise.resolve(onError(error));
  }
  const length = /^\s*\d+\s*$/.test(declared) ? Number(declared) : NaN;
  if (!Number.isSafeInteger(length)) {
    return Promise.resolve(onRead({ ok: false, status: 400, message: `Invalid Content-Length header "${declared}"` }));
  }
  if (length > maxBytes) return Promise.resolve(onRead(tooLarge(maxBytes)));
  let text: Promise<string>;
  try {
    text = request.text();
  } catch (error) {
    return Promise.resolve(onError(error));
  }
  // An in-process caller can declare a length it does not send; the text is recounted.
  return text.then((body) => onRead(bodyRead(body, maxBytes)), onError);
}

/** A body already read as text, under the limit (recounted only when its UTF-8 form could exceed it). */
export function bodyRead(text: string, maxBytes: number): BodyRead {
  return text.length * 3 > maxBytes && utf8Length(text) > maxBytes ? tooLarge(maxBytes) : { ok: true, text };
}

async function readStream(request: Request, maxBytes: number): Promise<BodyRead> {
  const body = request.body;
  if (body === null) return { ok: true, text: '' };
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      reader.cancel().catch(() => {});
      return tooLarge(maxBytes);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return { ok: true, text: new TextDecoder().decode(chunks[0]) };
  const joined = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    joined.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return { ok: true, text: new TextDecoder().decode(joined) };
}

function tooLarge(maxBytes: number): BodyRead {
  return { ok: false, status: 413, message: `Request body is larger than the ${maxBytes}-byte limit` };
}

/** Byte length of a string once encoded as UTF-8, without encoding it. */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}
