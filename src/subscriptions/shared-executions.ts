// Shared subscription executions: subscribers whose operation (document, operation name, variables)
// and declared context key are equal join one execution. Each event is executed once and its result
// serialized once; every member's frame is that same payload text inside its own transport's framing
// (a graphql-ws `next` message behind its operation id, an SSE event, a multipart part).
// Fan-out is one synchronous loop over the members, so a thousand subscribers cost a thousand string
// concatenations and socket writes per event, not a thousand executions and promise chains.
import type { ExecutionResult } from 'graphql';

/** One subscriber in a shared execution, as the adapter wires it to its socket. */
export interface Member {
  /** Writes one text frame to this member's socket (the adapter applies backpressure limits). */
  send(frame: string): void;
  /**
   * What goes before and after the payload text in this member's frame, e.g. `{"id":"…","type":"next","payload":`
   * and `}` on graphql-ws. Members with equal prefixes must have equal suffixes (one transport).
   */
  readonly nextPrefix: string;
  readonly nextSuffix: string;
  /** The execution produced errors outside the result (a throwing source): tell this member. */
  error(errors: readonly { message: string }[]): void;
  /** The execution ended (source done, or a one-off result was sent): complete this member. */
  complete(): void;
}

type Started = AsyncIterable<ExecutionResult> | ExecutionResult;

/** The key of a shared execution: subscribers with equal operations and equal share keys join one. */
export function operationKey(
  query: string,
  operationName: string | null | undefined,
  variables: Record<string, unknown> | null | undefined,
  shareKey: string,
): string {
  return JSON.stringify([query, operationName ?? null, variables ?? null, shareKey]);
}

/** Counters for tests and metrics. */
export interface SharedExecutionStats {
  /** Executions running right now (shared ones, and those of one subscriber). */
  executions: number;
  /** Members across them. */
  members: number;
}

/** Turns one event's result into the payload text every member's frame carries. */
export type SerializeResult = (result: ExecutionResult) => string;

export class SharedExecutions {
  readonly #serialize: SerializeResult;
  /** Shared executions by operation key. */
  readonly #running = new Map<string, Execution>();
  /** Every running execution, shared or of one member. */
  readonly #all = new Set<Execution>();

  constructor(serialize: SerializeResult = JSON.stringify) {
    this.#serialize = serialize;
  }

  /**
   * Adds `member` to the execution under `key`, starting it with `start` when there is none. With
   * `key` undefined the member gets an execution of its own. Returns the execution, whose remove()
   * takes the member out.
   */
  join(key: string | undefined, member: Member, start: () => Promise<Started> | Started): { remove(member: Member): void } {
    let execution = key === undefined ? undefined : this.#running.get(key);
    if (!execution) {
      const created = new Execution(this.#serialize, () => {
        this.#all.delete(created);
        if (key !== undefined && this.#running.get(key) === created) this.#running.delete(key);
      });
      this.#all.add(created);
      execution = created;
      if (key !== undefined) this.#running.set(key, created);
      created.add(member);
      created.run(start);
      return created;
    }
    execution.add(member);
    return execution;
  }

  stats(): SharedExecutionStats {
    let members = 0;
    for (const execution of this.#all) members += execution.size;
    return { executions: this.#all.size, members };
  }
}

class Execution {
  readonly #members = new Set<Member>();
  readonly #serialize: SerializeResult;
  readonly #onEnd: () => void;
  #iterator: AsyncIterator<ExecutionResult> | undefined;
  #ended = false;

  constructor(serialize: SerializeResult, onEnd: () => void) {
    this.#serialize = serialize;
    this.#onEnd = onEnd;
  }

  get size(): number {
    return this.#members.size;
  }

  add(member: Member): void {
    this.#members.add(member);
  }

  remove(member: Member): void {
    if (!this.#members.delete(member) || this.#members.size > 0) return;
    // The last member left: stop listening at once (graphql-js returns the source iterator).
    this.#end();
    void this.#iterator?.return?.()?.catch(() => {});
  }

  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#onEnd();
  }

  run(start: () => Promise<Started> | Started): void {
    void this.#loop(start);
  }

  async #loop(start: () => Promise<Started> | Started): Promise<void> {
    try {
      const started = await start();
      if (!isAsyncIterable(started)) {
        // A one-off result: the subscribe resolver failed, or the operation could not start.
        this.#end();
        const payload = this.#serialize(started);
        for (const member of this.#take()) {
          member.send(`${member.nextPrefix}${payload}${member.nextSuffix}`);
          member.complete();
        }
        return;
      }
      const iterator = started[Symbol.asyncIterator]();
      this.#iterator = iterator;
      if (this.#ended) {
        // Everyone left while it started.
        await iterator.return?.();
        return;
      }
      for (;;) {
        const step = await iterator.next();
        if (step.done || this.#ended) break;
        const payload = this.#serialize(step.value);
        // Members with the same operation id (clients mostly use the same ids) get the same string, so
        // a transport can encode it once for all of them.
        let prefix: string | undefined;
        let frame = '';
        // A Set iterates safely while members leave (a send may close a socket that is not reading).
        for (const member of this.#members) {
          if (member.nextPrefix !== prefix) {
            prefix = member.nextPrefix;
            frame = `${prefix}${payload}${member.nextSuffix}`;
          }
          member.send(frame);
        }
      }
      this.#end();
      for (const member of this.#take()) member.complete();
    } catch (error) {
      this.#end();
      const message = error instanceof Error ? error.message : String(error);
      for (const member of this.#take()) member.error([{ message }]);
    }
  }

  /** Removes every member (so their own removal is a no-op) and returns them. */
  #take(): Member[] {
    const members = [...this.#members];
    this.#members.clear();
    return members;
  }
}

function isAsyncIterable(value: unknown): value is AsyncIterable<ExecutionResult> {
  return typeof (value as { [Symbol.asyncIterator]?: unknown } | null)?.[Symbol.asyncIterator] === 'function';
}
