// The HTTP stream formats a GraphQL result stream can take, chosen from the Accept header, and how each
// frames a result: server-sent events as graphql-sse's distinct-connections mode speaks them,
// multipart/mixed with `subscriptionSpec=1.0` as Apollo Client and Router speak it, and plain
// multipart/mixed (incremental delivery, urql's multipart subscriptions).

import type { Answer } from '../handler/responses.ts';

export type StreamFormat = 'event-stream' | 'multipart-subscription' | 'multipart-mixed';

/** What a format writes around results; the body is a concatenation of these strings. */
export interface StreamFraming {
  readonly contentType: string;
  /** Written as soon as the stream opens (so headers and a first byte reach the client), or ''. */
  readonly open: string;
  /** Before and after the JSON text of one result. */
  readonly nextPrefix: string;
  readonly nextSuffix: string;
  /** Written every keep-alive interval while nothing else is. */
  readonly keepAlive: string;
  /** Ends the stream once results are done. */
  readonly end: string;
  /** Ends it when the last thing written was a keep-alive; default `end`. */
  readonly endAfterKeepAlive?: string;
  /** A failure outside GraphQL execution (the event source threw): the frame for `errors`, then `end`. */
  failure(errorsJson: string): string;
}

const jsonPart = 'content-type: application/json; charset=utf-8\r\n\r\n';

const eventStream: StreamFraming = {
  contentType: 'text/event-stream; charset=utf-8',
  open: ':\n\n',
  nextPrefix: 'event: next\ndata: ',
  nextSuffix: '\n\n',
  keepAlive: ':\n\n',
  // An empty `data:` line, or EventSource would not dispatch the event.
  end: 'event: complete\ndata:\n\n',
  failure: (errors) => `event: next\ndata: {"errors":${errors}}\n\n`,
};

// Every multipart frame ends with the boundary delimiter, so a client can parse a part the moment it
// arrives instead of waiting for the next one to begin.
const graphqlBoundary = '\r\n--graphql';
const heartbeat = `\r\n${jsonPart}{}${graphqlBoundary}`;
const multipartSubscription: StreamFraming = {
  contentType: 'multipart/mixed; boundary="graphql"; subscriptionSpec="1.0"',
  // `{}` is the protocol's heartbeat; clients skip it.
  open: `${graphqlBoundary}${heartbeat}`,
  nextPrefix: `\r\n${jsonPart}{"payload":`,
  nextSuffix: `}${graphqlBoundary}`,
  keepAlive: heartbeat,
  end: '--\r\n',
  // A transport-level error: no payload, the errors beside it.
  failure: (errors) => `\r\n${jsonPart}{"payload":null,"errors":${errors}}${graphqlBoundary}`,
};

const dashBoundary = '\r\n---';
const multipartMixed: StreamFraming = {
  contentType: 'multipart/mixed; boundary="-"',
  open: dashBoundary,
  nextPrefix: `\r\n${jsonPart}`,
  nextSuffix: dashBoundary,
  // Transport padding after the last delimiter (RFC 2046 §5.1.1): no part, so no client takes it for a
  // result, yet a proxy sees traffic and a runtime notices a client that is gone.
  keepAlive: ' ',
  end: '--\r\n',
  // The close delimiter cannot follow padding: a last part that says there is nothing more comes first.
  endAfterKeepAlive: `\r\n${jsonPart}{"hasNext":false}${dashBoundary}--\r\n`,
  failure: (errors) => `\r\n${jsonPart}{"errors":${errors}}${dashBoundary}`,
};

/**
 * The headers of a streamed response. `identity`: a runtime that compresses on its own (workerd)
 * would hold frames back in its encoder; `x-accel-buffering`: nginx would buffer them.
 */
export function streamHeaders(framing: StreamFraming): Record<string, string> {
  return { 'content-type': framing.contentType, 'cache-control': 'no-cache', 'content-encoding': 'identity', 'x-accel-buffering': 'no' };
}

export function framingOf(format: StreamFormat): StreamFraming {
  return format === 'event-stream' ? eventStream : format === 'multipart-subscription' ? multipartSubscription : multipartMixed;
}

/**
 * An answer for a client that accepts only a stream: a GraphQL response (a result, or errors before
 * execution, which graphql-sse asks to be sent as a `next` event) becomes one whole stream body.
 * Streams, and refusals that are no GraphQL response (404, 405, 413, 429...), stay as they are.
 */
export function singleResultAnswer(answer: Answer, format: StreamFormat): Answer {
  const { body } = answer;
  if (typeof body !== 'string' || (answer.status !== 200 && answer.status !== 400) || !body.startsWith('{')) return answer;
  const framing = framingOf(format);
  return {
    status: 200,
    headers: { ...answer.headers, 'content-type': framing.contentType, 'cache-control': 'no-cache' },
    body: `${framing.open}${framing.nextPrefix}${body}${framing.nextSuffix}${framing.end}`,
  };
}

/**
 * The stream format the Accept header asks for, or null when it names none. Only explicit ranges
 * count (a wildcard never opens a stream); the highest q wins, then the range listed first.
 */
export function negotiateStreamFormat(accept: string | null): StreamFormat | null {
  // The JSON-only headers of most requests, without parsing.
  if (accept === null || (!accept.includes('event-stream') && !accept.includes('multipart'))) return null;
  let best: StreamFormat | null = null;
  let bestQ = 0;
  for (const range of accept.split(',')) {
    const [rawType, ...parameters] = range.split(';');
    const mediaType = rawType.trim().toLowerCase();
    if (mediaType !== 'text/event-stream' && mediaType !== 'multipart/mixed') continue;
    let q = 1;
    let subscriptionSpec = false;
    for (const parameter of parameters) {
      const eq = parameter.indexOf('=');
      if (eq === -1) continue;
      const name = parameter.slice(0, eq).trim().toLowerCase();
      const value = parameter
        .slice(eq + 1)
        .trim()
        .replace(/^"|"$/g, '');
      if (name === 'q') {
        const weight = Number(value);
        q = Number.isFinite(weight) ? Math.min(Math.max(weight, 0), 1) : 0;
      } else if (name === 'subscriptionspec') subscriptionSpec = true;
    }
    if (q <= bestQ) continue;
    bestQ = q;
    best = mediaType === 'text/event-stream' ? 'event-stream' : subscriptionSpec ? 'multipart-subscription' : 'multipart-mixed';
  }
  return best;
}
