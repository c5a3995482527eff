// The numeric options of streamed responses, checked when the handler is created: the stream
// machinery itself is loaded by the first request that streams, and a bad option must fail at start.
import type { HttpStreamOptions } from './http-subscriptions.ts';

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
