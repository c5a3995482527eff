// How long one execution may run, and when it stops early: the request's `signal` (its client left)
// and `execution.timeoutMs`, joined into one AbortSignal per execution. graphql-js 17 takes it as
// `abortSignal` (it stops resolving fields and resolvers see it as `info.getAbortSignal()`); our
// incremental executor checks it before every resolver; graphql-js 16 cannot be stopped, so there the
// answer alone ends at the bound.
import { GraphQLError } from 'graphql';

export interface ExecutionOptions {
  /**
   * Longest time in milliseconds one query or mutation may execute (a stream of @defer/@stream
   * payloads included); past it the answer is the error "The operation did not complete within N
   * ms." and the execution is aborted. Subscriptions are not bounded. Default: no bound.
   */
  timeoutMs?: number;
}

/** Why an execution was aborted. */
export class ExecutionTimeout extends GraphQLError {
  constructor(readonly timeoutMs: number) {
    super(`The operation did not complete within ${timeoutMs} ms.`, { extensions: { code: 'EXECUTION_TIMEOUT' } });
  }
}

export interface ExecutionBound {
  readonly signal: AbortSignal;
  /** Set once the time bound has passed. */
  readonly timedOut: ExecutionTimeout | undefined;
  /** Stops the timer and the listener on the request's signal (the execution is over). */
  dispose(): void;
}

/** Checks `timeoutMs` when the handler is created. */
export function resolveTimeout(options: ExecutionOptions | undefined): number | undefined {
  const timeoutMs = options?.timeoutMs;
  if (timeoutMs === undefined) return undefined;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new TypeError(`createGraphQLHandler: execution.timeoutMs must be a positive number of milliseconds (got ${timeoutMs})`);
  }
  return timeoutMs;
}

/** One execution's signal: aborted when `requestSignal` is, or `timeoutMs` after now. */
export function boundExecution(requestSignal: AbortSignal | undefined, timeoutMs: number | undefined): ExecutionBound {
  // Without a time bound the request's own signal is all there is (no controller per request).
  if (timeoutMs === undefined && requestSignal !== undefined) return { signal: requestSignal, timedOut: undefined, dispose: () => {} };
  const controller = new AbortController();
  let timedOut: ExecutionTimeout | undefined;
  const onRequestAbort = () => controller.abort(requestSignal?.reason ?? new Error('The client went away.'));
  if (requestSignal?.aborted) onRequestAbort();
  else requestSignal?.addEventListener('abort', onRequestAbort, { once: true });
  const timer =
    timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = new ExecutionTimeout(timeoutMs);
          controller.abort(timedOut);
        }, timeoutMs);
  return {
    signal: controller.signal,
    get timedOut() {
      return timedOut;
    },
    dispose() {
      if (timer !== undefined) clearTimeout(timer);
      requestSignal?.removeEventListener('abort', onRequestAbort);
    },
  };
}

/**
 * `result` of an execution under `bound`: as it settles, or, once the bound's signal aborts first (or
 * graphql-js rejects because of it), the time bound's error, or `gone` for a client that left.
 */
export function settleWithin<T>(result: Promise<T>, bound: ExecutionBound, timedOut: (error: ExecutionTimeout) => T, gone: () => T): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const stopped = () => resolve(bound.timedOut !== undefined ? timedOut(bound.timedOut) : gone());
    if (bound.signal.aborted) stopped();
    else bound.signal.addEventListener('abort', stopped, { once: true });
    result.then(resolve, (error: unknown) => (bound.signal.aborted ? stopped() : reject(error)));
  }).finally(() => bound.dispose());
}
