// @defer and @stream: an operation that uses them, from a client that accepts a stream (multipart/mixed,
// or SSE), runs on the incremental executor (incremental-executor.ts), and each payload it yields
// becomes one frame of the response, in the format the Accept header names (incrementalFormatOf):
// `incrementalSpec=v0.2` (graphql-js 17's, the default) or `deferSpec=20220824` (the 2022 one).
// Everything else keeps its usual path: the compiled plan and graphql-js leave both directives out,
// so a client that asks for JSON gets the whole result at once, as without them.
import { GraphQLError, type ExecutionArgs, type ExecutionResult } from 'graphql';
import type { Answer } from '../handler/responses.ts';
import type { ExecutionBound } from '../execution/execution-bounds.ts';
import { executeIncrementally as execute, type IncrementalFormat } from './incremental-executor.ts';
import { registerStreamResponse, StreamChannel } from './stream-channel.ts';
import { framingOf, streamHeaders, type StreamFormat } from './stream-formats.ts';

/** One payload of an incremental result, as the executor yields it. */
interface IncrementalPayload extends ExecutionResult {
  hasNext?: boolean;
  incremental?: readonly (Record<string, unknown> & { errors?: readonly GraphQLError[] })[];
  completed?: readonly (Record<string, unknown> & { errors?: readonly GraphQLError[] })[];
}

export type { IncrementalFormat };

/**
 * The format an Accept header asks for: the stream range (multipart/mixed or text/event-stream) with
 * `deferSpec=20220824` or `incrementalSpec=v0.2` of the highest q (the first on a tie); 'v0.2' when none
 * names one.
 */
export function incrementalFormatOf(accept: string | null): IncrementalFormat {
  let best: IncrementalFormat = 'v0.2';
  let bestQ = 0;
  for (const range of accept?.split(',') ?? []) {
    const [rawType, ...parameters] = range.split(';');
    const mediaType = rawType.trim().toLowerCase();
    if (mediaType !== 'multipart/mixed' && mediaType !== 'text/event-stream') continue;
    let q = 1;
    let format: IncrementalFormat | undefined;
    for (const parameter of parameters) {
      const [name = '', value = ''] = parameter.split('=').map((part) => part.trim().replace(/^"|"$/g, ''));
      const key = name.toLowerCase();
      if (key === 'q') q = Number(value) || 0;
      else if (key === 'deferspec' && value === '20220824') format = '20220824';
      else if (key === 'incrementalspec' && value.toLowerCase() === 'v0.2') format = 'v0.2';
    }
    if (format === undefined || q <= bestQ) continue;
    best = format;
    bestQ = q;
  }
  return best;
}

/** The content type of a multipart answer names its format, as Apollo Server's does. */
const formatParameter: Record<IncrementalFormat, string> = { 'v0.2': 'incrementalSpec=v0.2', '20220824': 'deferSpec=20220824' };

export interface IncrementalDeliverySetup {
  /** The handler's error formatting (masking), for errors in the result and in each increment. */
  formatErrors(errors: readonly GraphQLError[]): unknown[];
  keepAliveMs: number;
  maxBufferedBytes: number;
  sendTimeoutMs: number;
}

export type ExecuteIncrementally = (args: ExecutionArgs) => Promise<ExecutionResult | AsyncIterable<ExecutionResult>>;

/** The executor for subscriptions that use @defer or @stream (graphql 16): each event's payloads, in order. */
export const executeIncrementally: ExecuteIncrementally = (args) => execute(args);

export interface IncrementalDelivery {
  /** The JSON text of one payload, its errors formatted. */
  serialize(payload: ExecutionResult): string;
  /**
   * Runs a query or mutation incrementally and answers with its payloads as a stream in `format`,
   * in the incremental format `accept` asks for.
   */
  run(args: ExecutionArgs, format: StreamFormat, accept: string | null, bound?: ExecutionBound): Promise<Answer>;
  /** The executor for subscriptions that use @defer or @stream. */
  execute: ExecuteIncrementally;
}

export function createIncrementalDelivery(setup: IncrementalDeliverySetup): IncrementalDelivery {
  const serialize = (payload: IncrementalPayload): string => {
    let formattedPayload: unknown = payload;
    const failed = (entries: IncrementalPayload['incremental']) => entries?.some((entry) => entry.errors !== undefined);
    const formatted = <T extends { errors?: readonly GraphQLError[] }>(entries: readonly T[]) =>
      entries.map((entry) => (entry.errors ? { ...entry, errors: setup.formatErrors(entry.errors) } : entry));
    if (payload.errors !== undefined || failed(payload.incremental) || failed(payload.completed)) {
      formattedPayload = {
        ...payload,
        ...(payload.errors && { errors: setup.formatErrors(payload.errors) }),
        ...(payload.incremental && { incremental: formatted(payload.incremental) }),
        ...(payload.completed && { completed: formatted(payload.completed) }),
      };
    }
    return JSON.stringify(formattedPayload);
  };

  async function run(args: ExecutionArgs, format: StreamFormat, accept: string | null, bound?: ExecutionBound): Promise<Answer> {
    const framing = framingOf(format);
    const incrementalFormat = incrementalFormatOf(accept);
    let result: Awaited<ReturnType<typeof execute>>;
    try {
      result = await execute(args, incrementalFormat, bound?.signal);
    } catch (error) {
      bound?.dispose();
      throw error;
    }
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
    if (format === 'multipart-mixed') headers['content-type'] += `; ${formatParameter[incrementalFormat]}`;
    if (!(Symbol.asyncIterator in result)) {
      bound?.dispose();
      // Nothing was deferred after all (`if: false`, or an error before execution): one payload.
      channel.write(`${framing.nextPrefix}${serialize(result)}${framing.nextSuffix}`);
      channel.end(framing.end, framing.endAfterKeepAlive);
      return { status: 200, headers, body: channel.body, madeInto: (response) => registerStreamResponse(response, channel.body) };
    }
    iterator = result[Symbol.asyncIterator]();
    // Past the time bound the stream ends with its error, and the remaining work stops.
    const stop = () => {
      if (!channel.isOpen) return;
      if (bound?.timedOut !== undefined) channel.write(framing.failure(JSON.stringify(setup.formatErrors([bound.timedOut]))));
      channel.end(framing.end, framing.endAfterKeepAlive);
      void iterator?.return?.()?.catch(() => {});
    };
    bound?.signal.addEventListener('abort', stop, { once: true });
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
        if (channel.isOpen) {
          channel.write(framing.failure(JSON.stringify(setup.formatErrors([failure]))));
          channel.end(framing.end, framing.endAfterKeepAlive);
        }
      } finally {
        bound?.signal.removeEventListener('abort', stop);
        bound?.dispose();
      }
    };
    void pump();
    return { status: 200, headers, body: channel.body, madeInto: (response) => registerStreamResponse(response, channel.body) };
  }

  return { serialize, run, execute: executeIncrementally };
}
