// The `subscribe` messages for subscription operations, taken before graphql-ws's core sees them, so
// that equal operations with an equal declared context key share one execution (shared-executions.ts).
// Queries, mutations, invalid documents and anything malformed still go to the core, which answers
// them as the protocol says; the core also keeps handling `complete` and socket close for our
// operations, because each is registered in its `ctx.subscriptions` like its own.
import { CloseCode, type Context, type ServerOptions, type SubscribePayload } from 'graphql-ws';
import { getOperationAST, subscribe, type ExecutionArgs, type ExecutionResult, type GraphQLError } from 'graphql';
import { SharedExecutions, type Member } from './shared-executions.ts';

export type ConnectionParams = Record<string, unknown> | undefined;

/**
 * Decides which subscribers may share one execution: subscribers whose operation is equal and whose
 * returned keys are equal share it (and its context value, the first subscriber's). `undefined`: this
 * subscriber gets an execution of its own. Called after `context`, with its value in
 * `args.contextValue`; return every part of that context the schema's resolvers read (a user id,
 * a role, a locale…).
 */
export type SubscriptionShareKey<E> = (ctx: Context<ConnectionParams, E>, args: ExecutionArgs) => string | undefined | Promise<string | undefined>;

export interface SharedSubscribeOptions<E> {
  options: ServerOptions<ConnectionParams, E>;
  /** The adapter's cached parse+validate. */
  prepare(payload: SubscribePayload): ExecutionArgs | readonly GraphQLError[];
  shareKey: SubscriptionShareKey<E> | false | undefined;
}

/** The adapter's socket functions for one connection (they do not depend on `this`). */
export interface SharedConnection {
  send(frame: string): void;
  close(code: number, reason: string): void;
}

export interface SharedSubscribe<E> {
  /** Takes `data` when it is a subscription to run here; false hands it to the core. */
  handle(ctx: Context<ConnectionParams, E>, connection: SharedConnection, data: string): boolean;
  readonly executions: SharedExecutions;
}

/**
 * Undefined when the options change what a subscriber receives per connection in ways we cannot
 * share (a custom onSubscribe, onOperation, onNext or JSON replacer): then the core runs everything.
 */
export function createSharedSubscribe<E>(setup: SharedSubscribeOptions<E>): SharedSubscribe<E> | undefined {
  const { options, prepare } = setup;
  if (setup.shareKey === false || options.onSubscribe || options.onOperation || options.onNext || options.jsonMessageReplacer) return undefined;
  const { context, roots, onError, onComplete } = options;
  // Without a `context` option resolvers see no per-connection data: the operation alone decides the
  // result, so sharing is safe by default. With one, only a declared key shares.
  const shareKey: SubscriptionShareKey<E> = setup.shareKey ?? (() => (context === undefined ? '' : undefined));
  const run = options.subscribe ?? subscribe;
  const executions = new SharedExecutions();

  // Per subscription, only object methods (see the adapter on esbuild's keepNames).
  const begin = async (
    ctx: Context<ConnectionParams, E>,
    connection: SharedConnection,
    id: string,
    payload: SubscribePayload,
    args: ExecutionArgs,
  ): Promise<void> => {
    let leave: (() => void) | undefined;
    let ended = false;
    // Registered like the core's own operations: the core calls return() on `complete` from the
    // client and when the socket closes.
    const handle = {
      [Symbol.asyncIterator]() {
        return handle;
      },
      async next(): Promise<IteratorResult<never>> {
        return { value: undefined, done: true };
      },
      async return(): Promise<IteratorResult<never>> {
        await handle.end(false);
        return { value: undefined, done: true };
      },
      async end(notify: boolean): Promise<void> {
        if (ended) return;
        ended = true;
        if (ctx.subscriptions[id] === handle) delete ctx.subscriptions[id];
        leave?.();
        try {
          await onComplete?.(ctx, id, payload);
        } finally {
          if (notify) connection.send(`{"id":${JSON.stringify(id)},"type":"complete"}`);
        }
      },
    };
    ctx.subscriptions[id] = handle;
    try {
      const contextValue = typeof context === 'function' ? await context(ctx, id, payload, args) : context;
      const execArgs: ExecutionArgs = { ...args, contextValue };
      const key = await shareKey(ctx, execArgs);
      if (ended) return;
      const member: Member = {
        send: connection.send,
        nextPrefix: `{"id":${JSON.stringify(id)},"type":"next","payload":`,
        error(errors) {
          (async () => {
            const replaced = await onError?.(ctx, id, payload, errors as readonly GraphQLError[]);
            if (!ended) connection.send(JSON.stringify({ id, type: 'error', payload: replaced ?? errors }));
            await handle.end(false);
          })().catch(report);
        },
        complete() {
          handle.end(true).catch(report);
        },
      };
      const operationKey = key === undefined ? undefined : JSON.stringify([payload.query, payload.operationName ?? null, payload.variables ?? null, key]);
      leave = executions.join(operationKey, member, () => run(execArgs) as Promise<AsyncIterable<ExecutionResult> | ExecutionResult>);
    } catch (error) {
      // A throwing context or share-key function, as the core treats failures outside execution.
      report(error);
      if (!ended) connection.close(CloseCode.InternalServerError, 'Internal server error');
    }
  };

  return {
    executions,
    handle(ctx, connection, data) {
      if (!ctx.acknowledged) return false;
      let message: { type?: unknown; id?: unknown; payload?: unknown };
      try {
        message = JSON.parse(data) as typeof message;
      } catch {
        return false;
      }
      if (message?.type !== 'subscribe' || typeof message.id !== 'string' || message.id === '') return false;
      const payload = message.payload as SubscribePayload;
      if (payload === null || typeof payload !== 'object' || typeof payload.query !== 'string') return false;
      if (payload.operationName != null && typeof payload.operationName !== 'string') return false;
      if (payload.variables != null && (typeof payload.variables !== 'object' || Array.isArray(payload.variables))) return false;
      const prepared = prepare(payload);
      if (Array.isArray(prepared)) return false;
      const args = prepared as ExecutionArgs;
      const operation = getOperationAST(args.document, args.operationName);
      if (operation?.operation !== 'subscription') return false;
      if (message.id in ctx.subscriptions) {
        connection.close(CloseCode.SubscriberAlreadyExists, `Subscriber for ${message.id} already exists`);
        return true;
      }
      const rootValue = 'rootValue' in args ? args.rootValue : roots?.subscription;
      void begin(ctx, connection, message.id, payload, { ...args, rootValue });
      return true;
    },
  };
}

function report(error: unknown): void {
  console.error('graphql-ws: a shared subscription failed outside GraphQL execution:', error);
}
