// The options of streamed responses, and their numeric limits checked when the handler is created: the
// stream machinery itself is loaded by the first request that streams, and a bad option must fail at start.
import type { ExecutionArgs } from 'graphql';

/** Decides which HTTP subscribers share one execution; see `HttpStreamOptions.subscriptionShareKey`. */
export type HttpSubscriptionShareKey = (request: Request, args: ExecutionArgs) => string | undefined | Promise<string | undefined>;

/** Subscriptions over server-sent events and multipart HTTP (docs/graphql/subscriptions.md). */
export interface HttpStreamOptions {
  /** Keep-alive frames (an SSE comment, a multipart heartbeat) after this many ms of silence. 0 disables. Default 12,000. */
  keepAlive?: number;
  /** Bytes queued unread for one stream past which it is cut and its subscription ended. Default 1 MiB. */
  maxBufferedBytes?: number;
  /**
   * Ms a stream may have bytes waiting without its client taking any before it is cut and its
   * subscription ended (a client that stopped reading, or one gone unnoticed). 0 disables. Default 60,000.
   */
  sendTimeout?: number;
  /** Streams one client may hold open at once; past it a request gets 429. Default 100. */
  maxStreamsPerClient?: number;
  /**
   * The client a request comes from, for `maxStreamsPerClient`; null leaves it uncapped. Default: the
   * address a proxy put in `cf-connecting-ip`, `x-real-ip` or `x-forwarded-for` (see open-streams.ts).
   */
  clientKey?: (request: Request) => string | null;
  /**
   * Which subscribers share one execution: equal operations (document, operation name, variables)
   * whose keys are equal share it, run with the first one's context value; `undefined` runs a
   * subscriber alone. Return every part of the context the resolvers read. Default: share when the
   * handler has no `context` option, never otherwise. `false` never shares.
   */
  subscriptionShareKey?: HttpSubscriptionShareKey | false;
}

// sendTimeout: nginx's send_timeout default, the field's usual bound on a client that takes nothing.
export const httpStreamDefaults = { keepAlive: 12_000, maxBufferedBytes: 1 << 20, sendTimeout: 60_000, maxStreamsPerClient: 100 } as const;

export interface StreamLimits {
  keepAliveMs: number;
  maxBufferedBytes: number;
  sendTimeoutMs: number;
  maxStreamsPerClient: number;
}

/** The options' limits with their defaults; throws a TypeError naming the option that is wrong. */
export function resolveStreamLimits(options: HttpStreamOptions): StreamLimits {
  return {
    keepAliveMs: nonNegative('keepAlive', options.keepAlive ?? httpStreamDefaults.keepAlive),
    maxBufferedBytes: positive('maxBufferedBytes', options.maxBufferedBytes ?? httpStreamDefaults.maxBufferedBytes),
    sendTimeoutMs: nonNegative('sendTimeout', options.sendTimeout ?? httpStreamDefaults.sendTimeout),
    maxStreamsPerClient: positive('maxStreamsPerClient', options.maxStreamsPerClient ?? httpStreamDefaults.maxStreamsPerClient),
  };
}

function positive(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value <= 0) throw new TypeError(`createGraphQLHandler: subscriptions.${name} must be a positive integer (got ${value})`);
  return value;
}

function nonNegative(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new TypeError(`createGraphQLHandler: subscriptions.${name} must be a non-negative integer (got ${value})`);
  return value;
}
