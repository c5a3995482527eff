// Subscriptions over plain HTTP: each request that asks for a stream (SSE or multipart) and carries a
// subscription becomes one member of a shared execution (../subscriptions/shared-executions.ts, the
// same machinery the WebSocket path runs on), writing into its own response body. The response body
// closing, however it closes, takes the member out, so a client that goes away releases its
// pub/sub topic at once.
import { subscribe as graphqlSubscribe, type ExecutionArgs, type ExecutionResult, type GraphQLError } from 'graphql';
import { operationKey, SharedExecutions, type Member, type SharedExecutionStats } from '../subscriptions/shared-executions.ts';
import type { RequestParams } from '../handler/options.ts';
import type { Answer } from '../handler/responses.ts';
import { registerStreamResponse, StreamChannel } from './stream-channel.ts';
import { framingOf, streamHeaders, type StreamFormat, type StreamFraming } from './stream-formats.ts';
import { clientKeyFromHeaders, OpenStreams } from './open-streams.ts';
import type { HttpStreamOptions, HttpSubscriptionShareKey, StreamLimits } from './stream-options.ts';

export interface HttpSubscriptionsSetup {
  options: HttpStreamOptions;
  /** The options' limits, checked when the handler was created. */
  limits: StreamLimits;
  /** Whether the handler builds a context per request (then sharing needs a declared key). */
  hasContext: boolean;
  /** The handler's error formatting, applied to every event's errors (masking). */
  serialize(result: ExecutionResult): string;
  /** The JSON text of errors outside execution (a throwing event source). */
  serializeErrors(errors: readonly GraphQLError[]): string;
  subscribe?: (args: ExecutionArgs) => ReturnType<typeof graphqlSubscribe>;
}

export interface HttpSubscriptions {
  /**
   * The streamed answer to a valid subscription, or a 429 when the client has too many streams open.
   * `run` replaces the subscribe function (an operation with @defer or @stream).
   */
  start(
    request: Request,
    args: ExecutionArgs,
    params: RequestParams,
    format: StreamFormat,
    run?: (args: ExecutionArgs) => Promise<AsyncIterable<ExecutionResult> | ExecutionResult>,
  ): Answer | Promise<Answer>;
  /** Subscriptions streaming now (`open`), and the executions behind them with their members. */
  stats(): SharedExecutionStats & { open: number };
  /** Ends every open stream without completing it, so clients reconnect (to another instance). */
  closeAll(): void;
}

export function createHttpSubscriptions(setup: HttpSubscriptionsSetup): HttpSubscriptions {
  const { options } = setup;
  const { keepAliveMs, maxBufferedBytes, sendTimeoutMs } = setup.limits;
  const open = new OpenStreams(setup.limits.maxStreamsPerClient);
  const clientKey = options.clientKey ?? clientKeyFromHeaders;
  const shareKey: HttpSubscriptionShareKey | false = options.subscriptionShareKey ?? (setup.hasContext ? false : () => '');
  const executions = new SharedExecutions(setup.serialize);
  const run = setup.subscribe ?? graphqlSubscribe;
  const channels = new Set<StreamChannel>();

  function streamed(
    request: Request,
    args: ExecutionArgs,
    key: string | undefined,
    format: StreamFormat,
    client: string | null,
    runWith: (args: ExecutionArgs) => Promise<AsyncIterable<ExecutionResult> | ExecutionResult>,
  ): Answer {
    const framing = framingOf(format);
    const subscriber = new StreamSubscriber(framing, setup.serializeErrors);
    subscriber.channel = new StreamChannel({
      open: framing.open,
      keepAlive: framing.keepAlive,
      keepAliveMs,
      maxBufferedBytes,
      sendTimeoutMs,
      onClose: () => {
        channels.delete(subscriber.channel);
        subscriber.execution?.remove(subscriber);
        open.release(client);
      },
    });
    channels.add(subscriber.channel);
    // A runtime that does not cancel the body when the client leaves still aborts the request.
    request.signal?.addEventListener('abort', () => subscriber.channel.cancel(), { once: true });
    subscriber.execution = executions.join(key, subscriber, () => runWith(args));
    const { body } = subscriber.channel;
    return { status: 200, headers: streamHeaders(framing), body, madeInto: (response) => registerStreamResponse(response, body) };
  }

  return {
    start(request, args, params, format, runWith = run as (args: ExecutionArgs) => Promise<AsyncIterable<ExecutionResult> | ExecutionResult>) {
      const client = clientKey(request);
      if (!open.acquire(client)) {
        return {
          status: 429,
          headers: { 'content-type': 'application/json; charset=utf-8', 'retry-after': '5' },
          body: JSON.stringify({
            errors: [{ message: `Too many open subscription streams: at most ${open.maxPerClient} per client; close one before opening another` }],
          }),
        };
      }
      let key: string | undefined | Promise<string | undefined>;
      try {
        key = shareKey === false ? undefined : shareKey(request, args);
      } catch (error) {
        open.release(client);
        throw error;
      }
      const withKey = (shared: string | undefined) =>
        streamed(
          request,
          args,
          shared === undefined ? undefined : operationKey(params.query, params.operationName, params.variables, shared),
          format,
          client,
          runWith,
        );
      if (!(key instanceof Promise)) return withKey(key);
      return key.then(withKey, (error: unknown) => {
        open.release(client);
        throw error;
      });
    },
    stats() {
      return { ...executions.stats(), open: open.total };
    },
    closeAll() {
      for (const channel of channels) channel.cancel();
    },
  };
}

/** One HTTP subscriber: a member of an execution that writes into its response body. */
class StreamSubscriber implements Member {
  readonly nextPrefix: string;
  readonly nextSuffix: string;
  channel!: StreamChannel;
  execution: { remove(member: Member): void } | undefined;

  constructor(
    readonly framing: StreamFraming,
    readonly serializeErrors: (errors: readonly GraphQLError[]) => string,
  ) {
    this.nextPrefix = framing.nextPrefix;
    this.nextSuffix = framing.nextSuffix;
  }

  send(frame: string): void {
    this.channel.write(frame);
  }

  error(errors: readonly { message: string }[]): void {
    this.channel.write(this.framing.failure(this.serializeErrors(errors as readonly GraphQLError[])));
    this.complete();
  }

  complete(): void {
    this.channel.end(this.framing.end, this.framing.endAfterKeepAlive);
  }
}
