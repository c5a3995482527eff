// @defer and @stream: an operation that uses them, from a client that accepts a stream (multipart/mixed,
// or SSE), runs on the incremental executor (incremental-executor.ts), and each payload it yields
// (`{data, hasNext}`, then `{incremental: [...], hasNext}`, the format of Apollo Client's
// deferSpec=20220824 and urql) becomes one frame of the response. Everything else keeps
// its usual path: the compiled plan and graphql-js ignore both directives, so a client that asks for
// JSON gets the whole result at once, as without them.
import { GraphQLError, type ExecutionArgs, type ExecutionResult } from 'graphql';
import type { Answer } from '../handler/responses.ts';
import { executeIncrementally as execute } from './incremental-executor.ts';
import { registerStreamResponse, StreamChannel } from './stream-channel.ts';
import { framingOf, streamHeaders, type StreamFormat } from './stream-formats.ts';

/** One payload of an incremental result, as the executor yields it. */
interface IncrementalPayload extends ExecutionResult {
  hasNext?: boolean;
  incremental?: readonly (Record<string, unknown> & { errors?: readonly GraphQLError[] })[];
}

export interface IncrementalDeliverySetup {
  /** The handler's error formatting (masking), for errors in the result and in each increment. */
  formatErrors(errors: readonly GraphQLError[]): unknown[];
  keepAliveMs: number;
  maxBufferedBytes: number;
  sendTimeoutMs: number;
}

export type ExecuteIncrementally = (args: ExecutionArgs) => Promise<ExecutionResult | AsyncIterable<ExecutionResult>>;

/** The executor for subscriptions that use @defer or @stream: each event's payloads, in order. */
export const executeIncrementally: ExecuteIncrementally = execute;

export interface IncrementalDelivery {
  /** The JSON text of one payload, its errors formatted. */
  serialize(payload: ExecutionResult): string;
  /** Runs a query or mutation incrementally and answers with its payloads as a stream in `format`. */
  run(args: ExecutionArgs, format: StreamFormat): Promise<Answer>;
  /** The executor for subscriptions that use @defer or @stream. */
  execute: ExecuteIncrementally;
}

export function createIncrementalDelivery(setup: IncrementalDeliverySetup): IncrementalDelivery {
  const serialize = (payload: IncrementalPayload): string => {
    let formatted: unknown = payload;
    if (payload.errors !== undefined || payload.incremental?.some((increment) => increment.errors !== undefined)) {
      formatted = {
        ...payload,
        ...(payload.errors && { errors: setup.formatErrors(payload.errors) }),
        ...(payload.incremental && {
          incremental: payload.incremental.map((increment) => (increment.errors ? { ...increment, errors: setup.formatErrors(increment.errors) } : increment)),
        }),
      };
    }
    return JSON.stringify(formatted);
  };

  async function run(args: ExecutionArgs, format: StreamFormat): Promise<Answer> {
    const framing = framingOf(format);
    const result = await executeIncrementally(args);
    let iterator: AsyncIterator<ExecutionResult> | undefined;
    const channel = new StreamChannel({
      open: framing.open,
      keepAlive: framing.keepAlive,
      keepAliveMs: setup.keepAliveMs,
      maxBufferedBytes: setup.maxBufferedBytes,
      sendTimeoutMs: setup.sendTimeoutMs,
      // A client that leaves (or reads too slowly) stops the execution's remaining work.
      onClose: (reason) => {
        if (reason !== 'ended') void iterator?.return?.()?.catch(() => {});
      },
    });
    const headers = streamHeaders(framing);
    if (!(Symbol.asyncIterator in result)) {
      // Nothing was deferred after all (`if: false`, or an error before execution): one payload.
      channel.write(`${framing.nextPrefix}${serialize(result)}${framing.nextSuffix}`);
      channel.end(framing.end, framing.endAfterKeepAlive);
      return { status: 200, headers, body: channel.body, madeInto: (response) => registerStreamResponse(response, channel.body) };
    }
    iterator = result[Symbol.asyncIterator]();
    const pump = async (): Promise<void> => {
      try {
        for (;;) {
          const step = await iterator!.next();
          if (step.done || !channel.isOpen) break;
          channel.write(`${framing.nextPrefix}${serialize(step.value)}${framing.nextSuffix}`);
        }
        channel.end(framing.end, framing.endAfterKeepAlive);
      } catch (error) {
        // An unexpected failure, masked like any other.
        const failure = new GraphQLError(error instanceof Error ? error.message : String(error), { originalError: error instanceof Error ? error : undefined });
        channel.write(framing.failure(JSON.stringify(setup.formatErrors([failure]))));
        channel.end(framing.end, framing.endAfterKeepAlive);
      }
    };
    void pump();
    return { status: 200, headers, body: channel.body, madeInto: (response) => registerStreamResponse(response, channel.body) };
  }

  return { serialize, run, execute: executeIncrementally };
}
