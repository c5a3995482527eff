// The `subscribe` messages for subscription operations, taken before graphql-ws's core sees them, so
// that equal operations with an equal declared context key share one execution (shared-executions.ts).
// Queries, mutations, invalid documents and anything malformed still go to the core, which answers
// them as the protocol says; the core also keeps handling `complete` and socket close for our
// operations, because each is registered in its `ctx.subscriptions` like its own.
import { CloseCode, type Context, type ServerOptions, type SubscribePayload } from 'graphql-ws';
import { getOperationAST, subscribe, type ExecutionArgs, type ExecutionResult, type GraphQLError } from 'graphql';
import { operationKey, SharedExecutions, type Member } from './shared-executions.ts';

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

/** The adapter's side of one connection. */
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
 * share (a custom onSubscribe, onOperation, onNext, JSON replacer or reviver): then the core runs
 * everything.
 */
export function createSharedSubscribe<E>(setup: SharedSubscribeOptions<E>): SharedSubscribe<E> | undefined {
  const { options, prepare } = setup;
  if (setup.shareKey === false || options.onSubscribe || options.onOperation || options.onNext || options.jsonMessageReplacer || options.jsonMessageReviver) {
    return undefined;
  }
  const { context, roots, onError, onComplete } = options;
  // Without a `context` option resolvers see no per-connection data: the operation alone decides the
  // result, so sharing is safe by default. With one, only a declared key shares.
  const shareKey: SubscriptionShareKey<E> = setup.shareKey ?? (() => (context === undefined ? '' : undefined));
  const run = options.subscribe ?? subscribe;
  const executions = new SharedExecutions();

  const hooks: SubscriberHooks<E> = { onComplete, onError };
  const begin = async (subscriber: Subscriber<E>, payload: SubscribePayload, args: ExecutionArgs): Promise<void> => {
    const { ctx, id, connection } = subscriber;
    try {
      const contextValue = typeof context === 'function' ? await context(ctx, id, payload, args) : context;
      const execArgs: ExecutionArgs = { ...args, contextValue };
      const key = await shareKey(ctx, execArgs);
      if (subscriber.ended) return;
      const sharedKey = key === undefined ? undefined : operationKey(payload.query, payload.operationName, payload.variables, key);
      subscriber.execution = executions.join(sharedKey, subscriber, () => run(execArgs) as Promise<AsyncIterable<ExecutionResult> | ExecutionResult>);
    } catch (error) {
      // A throwing context or share-key function, as the core treats failures outside execution.
      report(error);
      if (!subscriber.ended) connection.close(CloseCode.InternalServerError, 'Internal server error');
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
      // Registered like the core's own operations: the core calls its return() on `complete` from
      // the client and when the socket closes.
      const subscriber = new Subscriber(ctx, connection, message.id, payload, hooks);
      ctx.subscriptions[message.id] = subscriber;
      void begin(subscriber, payload, { ...args, rootValue });
      return true;
    },
  };
}

interface SubscriberHooks<E> {
  onComplete: ServerOptions<ConnectionParams, E>['onComplete'];
  onError: ServerOptions<ConnectionParams, E>['onError'];
}

/**
 * One subscription on the shared path: a member of an execution, and the async-iterator-shaped
 * handle the core keeps in ctx.subscriptions. One object with prototype methods, so a subscriber
 * costs a few fields rather than a set of closures.
 */
class Subscriber<E> implements Member {
  readonly nextPrefix: string;
  readonly nextSuffix = '}';
  ended = false;
  execution: { remove(member: Member): void } | undefined;

  constructor(
    readonly ctx: Context<ConnectionParams, E>,
    readonly connection: SharedConnection,
    readonly id: string,
    readonly payload: SubscribePayload,
    readonly hooks: SubscriberHooks<E>,
  ) {
    this.nextPrefix = `{"id":${JSON.stringify(id)},"type":"next","payload":`;
  }

  send(frame: string): void {
    this.connection.send(frame);
  }

  error(errors: readonly { message: string }[]): void {
    this.#fail(errors).catch(report);
  }

  async #fail(errors: readonly { message: string }[]): Promise<void> {
    const replaced = await this.hooks.onError?.(this.ctx, this.id, this.payload, errors as readonly GraphQLError[]);
    if (!this.ended) this.connection.send(JSON.stringify({ id: this.id, type: 'error', payload: replaced ?? errors }));
    await this.end(false);
  }

  complete(): void {
    this.end(true).catch(report);
  }

  async end(notify: boolean): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    if (this.ctx.subscriptions[this.id] === this) delete this.ctx.subscriptions[this.id];
    this.execution?.remove(this);
    try {
      await this.hooks.onComplete?.(this.ctx, this.id, this.payload);
    } finally {
      if (notify) this.connection.send(`{"id":${JSON.stringify(this.id)},"type":"complete"}`);
    }
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<never>> {
    return { value: undefined, done: true };
  }

  async return(): Promise<IteratorResult<never>> {
    await this.end(false);
    return { value: undefined, done: true };
  }
}

function report(error: unknown): void {
  console.error('graphql-ws: a shared subscription failed outside GraphQL execution:', error);
}
