// Incremental delivery on graphql-js 16 and 17 alike: executes an operation as graphql-js does, except
// that the fragments marked @defer and the list items past a @stream's initialCount are left out of the
// first payload and sent after it. An entry is sent only after the payload that holds its parent, and
// a streamed item only after the item before it. Where a field error nulls a parent, the entries
// beneath it are dropped (and a streamed iterator returned), as nothing is left to attach them to.
// Two formats (IncrementalFormat):
// - 'v0.2' (graphql-js 17's, Accept `incrementalSpec=v0.2`): each deferred fragment and each stream is
//   announced in `pending` ({id, path, label}) with the payload that holds its parent; its data comes
//   as `incremental` entries ({id, data} for a fragment, {id, items} for streamed items) and its end
//   as `completed` ({id}, with `errors` when it failed as a whole).
// - '20220824' (Accept `deferSpec=20220824`): `{data, path, label}` for a fragment and `{items, path,
//   label}` for one streamed item, in `incremental`, nothing announced.
import {
  GraphQLError,
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  Kind,
  assertValidSchema,
  defaultFieldResolver,
  defaultTypeResolver,
  getArgumentValues,
  getDirectiveValues,
  isAbstractType,
  isLeafType,
  isListType,
  isNonNullType,
  isObjectType,
  locatedError,
  responsePathAsArray,
  typeFromAST,
  type ExecutionArgs,
  type ExecutionResult,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLFieldResolver,
  type GraphQLList,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLResolveInfo,
  type GraphQLTypeResolver,
  type InlineFragmentNode,
  type ResponsePath,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { fieldDefinition, resolveInfoOf, type OperationScope } from '../execution/field-definition.ts';
import { coerceVariables, createSourceEventStream, isErrorList, resolveInfoExtras } from '../execution/graphql-compat.ts';
import { GraphQLDeferDirective, GraphQLStreamDirective } from './incremental-directives.ts';

type Payload = ExecutionResult & {
  hasNext?: boolean;
  incremental?: Record<string, unknown>[];
  pending?: { id: string; path: readonly (string | number)[]; label?: string }[];
  completed?: { id: string; errors?: readonly GraphQLError[] }[];
};
export type IncrementalResult = ExecutionResult | AsyncIterable<Payload>;

/** The payload format: graphql-js 17's current one, or the 2022 one Apollo Client names deferSpec=20220824. */
export type IncrementalFormat = 'v0.2' | '20220824';

/** A deferred fragment, or a stream: what the current format announces and completes as one. */
class Group {
  /** Given when it is announced. */
  id: string | undefined;
  /** Its parts added and not yet sent. */
  open = 0;
  /** No more parts will join it. */
  closed: boolean;
  done = false;
  constructor(
    readonly kind: 'defer' | 'stream',
    readonly parent: Part,
    readonly path: readonly (string | number)[],
    readonly label: string | undefined,
  ) {
    this.closed = kind === 'defer';
  }
}

/** graphql-js's response path: a linked list from a field back to the root. */
type Path = ResponsePath;

const at = (prev: Path | undefined, key: string | number, typename: string | undefined): Path => ({ prev, key, typename });

/**
 * What one payload entry is made of: the first payload (no parent) or a deferred fragment or streamed
 * item. Errors of the fields executed for it are its own.
 */
class Part {
  readonly errors: GraphQLError[] = [];
  /** The entry once its work is done; null for work that ends without one (an iterator's end). */
  entry: Record<string, unknown> | null | undefined;
  sent = false;
  dropped = false;
  iterator: AsyncIterator<unknown> | undefined;
  constructor(
    readonly parent: Part | null,
    /** The streamed item sent before this one. */
    readonly after: Part | undefined,
    readonly path: readonly (string | number)[],
    /** The fragment or stream it belongs to (none for the first payload). */
    readonly group?: Group,
  ) {}
}

/** Holds the parts not yet sent and hands them out, each once its parent (and predecessor) is. */
class Publisher {
  readonly pending = new Set<Part>();
  private nextId = 0;
  constructor(readonly format: IncrementalFormat) {}
  /** Readers waiting for a part to be done or dropped. */
  private waiting: (() => void)[] = [];
  finished = false;

  private wake(): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (const resume of waiting) resume();
  }

  add(part: Part): boolean {
    if (this.finished || part.parent?.dropped || part.after?.dropped) {
      part.dropped = true;
      return false;
    }
    this.pending.add(part);
    if (part.group !== undefined) part.group.open++;
    return true;
  }

  done(part: Part, entry: Record<string, unknown> | null): void {
    part.entry = entry;
    this.wake();
  }

  /** Drops the parts `owner`'s work created under `nullPath` (and everything beneath them). */
  dropUnder(owner: Part, nullPath: readonly (string | number)[]): void {
    for (const part of this.pending) {
      if (part.parent === owner && nullPath.every((key, i) => part.path[i] === key)) this.drop(part);
    }
  }

  private drop(part: Part): void {
    if (part.dropped) return;
    part.dropped = true;
    this.pending.delete(part);
    void part.iterator?.return?.()?.catch(() => {});
    for (const other of this.pending) if (other.parent === part || other.after === part) this.drop(other);
    this.wake();
  }

  /** The payload that sends `sent` (in the order they were sent). */
  private payload(sent: readonly Part[], hasNext: boolean): Payload {
    if (this.format === '20220824') {
      const incremental = sent.flatMap((part) => (part.entry ? [part.entry] : []));
      return incremental.length > 0 ? { incremental, hasNext } : { hasNext };
    }
    const pending = this.announce(sent);
    const incremental: Record<string, unknown>[] = [];
    const completed: NonNullable<Payload['completed']> = [];
    for (const part of sent) {
      const group = part.group!;
      group.open--;
      if (group.done) continue; // a stream that failed as a whole sends nothing more
      const entry = part.entry;
      if (entry === null || entry === undefined)
        group.closed = true; // an async iterator's end
      else {
        const value = group.kind === 'defer' ? entry.data : entry.items;
        if (value === null) {
          // The fragment or a non-null item failed: the group ends with its errors.
          completed.push({ id: group.id!, errors: part.errors });
          group.done = true;
          continue;
        }
        incremental.push(group.kind === 'defer' ? { id: group.id, data: value, ...errorsOf(part) } : { id: group.id, items: value, ...errorsOf(part) });
      }
      if (group.closed && group.open === 0) {
        completed.push({ id: group.id! });
        group.done = true;
      }
    }
    const payload: Payload = {};
    if (pending.length > 0) payload.pending = pending;
    if (incremental.length > 0) payload.incremental = incremental;
    if (completed.length > 0) payload.completed = completed;
    payload.hasNext = hasNext;
    return payload;
  }

  /**
   * Gives an id to every group whose parent has been sent (by now, or in `sent`), and returns their
   * announcements: a group is announced with the payload that holds its parent.
   */
  announce(sent: readonly Part[] = []): NonNullable<Payload['pending']> {
    const announced: NonNullable<Payload['pending']> = [];
    for (const part of [...sent, ...this.pending]) {
      const group = part.group;
      if (group === undefined || group.id !== undefined || !group.parent.sent) continue;
      group.id = String(this.nextId++);
      announced.push(group.label === undefined ? { id: group.id, path: group.path } : { id: group.id, path: group.path, label: group.label });
    }
    return announced;
  }

  /** The later payloads: each holds the entries ready by then, the last says `hasNext: false`. */
  payloads(): AsyncIterator<Payload> & AsyncIterable<Payload> {
    const next = async (): Promise<IteratorResult<Payload>> => {
      while (!this.finished) {
        const sent: Part[] = [];
        for (let found = true; found; ) {
          found = false;
          for (const part of this.pending) {
            if (part.entry === undefined || (part.parent !== null && !part.parent.sent) || (part.after !== undefined && !part.after.sent)) continue;
            part.sent = true;
            this.pending.delete(part);
            sent.push(part);
            found = true;
          }
        }
        const hasNext = this.pending.size > 0;
        if (sent.length > 0 || !hasNext) {
          this.finished = !hasNext;
          return { value: this.payload(sent, hasNext), done: false };
        }
        await new Promise<void>((resolve) => this.waiting.push(resolve));
      }
      return { value: undefined, done: true };
    };
    const stop = async (): Promise<IteratorResult<Payload>> => {
      this.finished = true;
      for (const part of this.pending) void part.iterator?.return?.()?.catch(() => {});
      this.pending.clear();
      this.wake();
      return { value: undefined, done: true };
    };
    return {
      next,
      return: stop,
      [Symbol.asyncIterator]() {
        return this;
      },
    };
  }
}

function errorsOf(part: Part): { errors?: readonly GraphQLError[] } {
  return part.errors.length > 0 ? { errors: part.errors } : {};
}

/** One operation being run: what every resolver's info carries about it, and the executor's own state. */
interface Run extends OperationScope {
  readonly contextValue: unknown;
  readonly fieldResolver: GraphQLFieldResolver<unknown, unknown>;
  readonly typeResolver: GraphQLTypeResolver<unknown, unknown>;
  readonly publisher: Publisher;
  /** Aborted when the client leaves or the time bound passes: no resolver starts after that. */
  readonly signal: AbortSignal | undefined;
  readonly collected: WeakMap<readonly FieldNode[], Map<GraphQLObjectType, Collected>>;
}

interface Collected {
  fields: Map<string, FieldNode[]>;
  deferred: { label: string | undefined; fields: Map<string, FieldNode[]> }[];
}

/**
 * Executes `args` with @defer and @stream: a result as graphql-js gives it when nothing was deferred
 * or streamed (or the operation could not start), otherwise the payloads. A subscription gives each
 * event's payloads in turn.
 */
export async function executeIncrementally(
  args: ExecutionArgs,
  format: IncrementalFormat = '20220824',
  signal: AbortSignal | undefined = undefined,
): Promise<IncrementalResult> {
  assertValidSchema(args.schema);
  const run = prepare(args, format, args.rootValue, signal);
  if (!('schema' in run)) return run;
  if (run.operation.operation === 'subscription') return subscribe(args, format, signal);
  return executeOperation(run);
}

/** The operation, its fragments and its variables, or graphql-js's errors for them. */
function prepare(args: ExecutionArgs, format: IncrementalFormat, rootValue: unknown, signal: AbortSignal | undefined): Run | ExecutionResult {
  let operation: OperationDefinitionNode | undefined;
  const fragments: Record<string, FragmentDefinitionNode> = Object.create(null);
  for (const definition of args.document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments[definition.name.value] = definition;
    else if (definition.kind === Kind.OPERATION_DEFINITION) {
      if (args.operationName == null) {
        if (operation !== undefined) return { errors: [new GraphQLError('Must provide operation name if query contains multiple operations.')] };
        operation = definition;
      } else if (definition.name?.value === args.operationName) operation = definition;
    }
  }
  if (operation === undefined) {
    return { errors: [new GraphQLError(args.operationName == null ? 'Must provide an operation.' : `Unknown operation named "${args.operationName}".`)] };
  }
  const variables = coerceVariables(args.schema, operation.variableDefinitions ?? [], args.variableValues ?? {});
  if (isErrorList(variables)) return { errors: variables };
  return {
    schema: args.schema,
    fragments,
    rootValue,
    contextValue: args.contextValue,
    operation,
    variableValues: variables.executor,
    infoExtras: resolveInfoExtras(signal),
    signal,
    fieldResolver: args.fieldResolver ?? defaultFieldResolver,
    typeResolver: args.typeResolver ?? defaultTypeResolver,
    publisher: new Publisher(format),
    collected: new WeakMap(),
  };
}

async function executeOperation(run: Run): Promise<IncrementalResult> {
  const rootType = run.schema.getRootType(run.operation.operation);
  if (rootType == null) {
    return { errors: [new GraphQLError(`Schema is not configured to execute ${run.operation.operation} operation.`, { nodes: run.operation })] };
  }
  const first = new Part(null, undefined, []);
  const collected = collectFields(run, rootType, [run.operation.selectionSet]);
  let data: Record<string, unknown> | null;
  try {
    data = await executeFields(run, rootType, run.rootValue, undefined, collected, first, run.operation.operation === 'mutation');
  } catch (error) {
    first.errors.push(error as GraphQLError);
    run.publisher.dropUnder(first, []);
    data = null;
  }
  first.sent = true;
  const result: Payload = first.errors.length > 0 ? { errors: first.errors, data } : { data };
  if (run.publisher.pending.size === 0) return result;
  if (run.publisher.format === 'v0.2') result.pending = run.publisher.announce();
  const later = run.publisher.payloads();
  let started = false;
  const iterator: AsyncIterator<Payload> & AsyncIterable<Payload> = {
    next: () => {
      if (started) return later.next();
      started = true;
      return Promise.resolve({ value: { ...result, hasNext: true }, done: false });
    },
    return: () => later.return!(),
    [Symbol.asyncIterator]() {
      return this;
    },
  };
  return iterator;
}

/** A subscription: each event executed incrementally, its payloads one after another. */
async function subscribe(args: ExecutionArgs, format: IncrementalFormat, signal: AbortSignal | undefined): Promise<IncrementalResult> {
  const source = await createSourceEventStream(args);
  if (!(Symbol.asyncIterator in source)) return source;
  const events = source[Symbol.asyncIterator]();
  let current: AsyncIterator<Payload> | undefined;
  const iterator: AsyncIterator<Payload> & AsyncIterable<Payload> = {
    async next() {
      for (;;) {
        if (current !== undefined) {
          const step = await current.next();
          if (!step.done) return step;
          current = undefined;
        }
        const event = await events.next();
        if (event.done) return { value: undefined, done: true };
        const run = prepare(args, format, event.value, signal);
        const result = 'schema' in run ? await executeOperation(run) : run;
        if (!(Symbol.asyncIterator in result)) return { value: result, done: false };
        current = result[Symbol.asyncIterator]();
      }
    },
    async return() {
      await current?.return?.();
      await events.return?.();
      return { value: undefined, done: true };
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
  return iterator;
}

/** The fields of `selectionSets` for `type` by response key, and its deferred fragments apart. */
function collectFields(run: Run, type: GraphQLObjectType, selectionSets: readonly SelectionSetNode[]): Collected {
  const collected: Collected = { fields: new Map(), deferred: [] };
  const visited = new Set<string>();
  for (const selectionSet of selectionSets) collectInto(run, type, selectionSet, collected.fields, collected, visited);
  return collected;
}

function collectInto(
  run: Run,
  type: GraphQLObjectType,
  selectionSet: SelectionSetNode,
  fields: Map<string, FieldNode[]>,
  collected: Collected,
  visited: Set<string>,
): void {
  for (const selection of selectionSet.selections) {
    if (!included(run, selection)) continue;
    if (selection.kind === Kind.FIELD) {
      const key = selection.alias?.value ?? selection.name.value;
      const nodes = fields.get(key);
      if (nodes === undefined) fields.set(key, [selection]);
      else nodes.push(selection);
      continue;
    }
    const defer = getDirectiveValues(GraphQLDeferDirective, selection, run.variableValues) as { if: boolean; label?: string } | undefined;
    const deferred = defer !== undefined && defer.if !== false;
    let fragment: InlineFragmentNode | FragmentDefinitionNode | undefined;
    if (selection.kind === Kind.INLINE_FRAGMENT) fragment = selection;
    else {
      const name = selection.name.value;
      if (!deferred && visited.has(name)) continue;
      if (!deferred) visited.add(name);
      fragment = run.fragments[name];
      if (fragment === undefined) continue;
    }
    if (!applies(run, fragment, type)) continue;
    if (!deferred) collectInto(run, type, fragment.selectionSet, fields, collected, visited);
    else {
      const own = new Map<string, FieldNode[]>();
      collectInto(run, type, fragment.selectionSet, own, collected, visited);
      collected.deferred.push({ label: defer.label, fields: own });
    }
  }
}

function included(run: Run, node: SelectionSetNode['selections'][number]): boolean {
  if (getDirectiveValues(GraphQLSkipDirective, node, run.variableValues)?.if === true) return false;
  return getDirectiveValues(GraphQLIncludeDirective, node, run.variableValues)?.if !== false;
}

function applies(run: Run, fragment: InlineFragmentNode | FragmentDefinitionNode, type: GraphQLObjectType): boolean {
  if (!fragment.typeCondition) return true;
  const condition = typeFromAST(run.schema, fragment.typeCondition);
  if (condition === type) return true;
  return condition !== undefined && isAbstractType(condition) && run.schema.isSubType(condition, type);
}

/** The fields below `fieldNodes` on `type`, collected once per run. */
function subfields(run: Run, type: GraphQLObjectType, fieldNodes: readonly FieldNode[]): Collected {
  let byType = run.collected.get(fieldNodes);
  if (byType === undefined) run.collected.set(fieldNodes, (byType = new Map()));
  let collected = byType.get(type);
  if (collected === undefined) {
    collected = collectFields(
      run,
      type,
      fieldNodes.flatMap((node) => (node.selectionSet ? [node.selectionSet] : [])),
    );
    byType.set(type, collected);
  }
  return collected;
}

/**
 * An object's fields (one after another for a mutation's root). Its deferred fragments start beside
 * them, or after them on a mutation's root, whose fields must run in order.
 */
async function executeFields(
  run: Run,
  type: GraphQLObjectType,
  source: unknown,
  path: Path | undefined,
  collected: Collected,
  part: Part,
  serially = false,
): Promise<Record<string, unknown>> {
  const keys = [...collected.fields.keys()];
  const field = (key: string) => executeField(run, type, source, collected.fields.get(key)!, at(path, key, type.name), part);
  let values: unknown[];
  if (serially) {
    values = [];
    for (const key of keys) values.push(await field(key));
    for (const deferred of collected.deferred) deferFragment(run, type, source, path, deferred, part);
  } else {
    for (const deferred of collected.deferred) deferFragment(run, type, source, path, deferred, part);
    values = await Promise.all(keys.map(field));
  }
  const result: Record<string, unknown> = Object.create(null);
  keys.forEach((key, i) => {
    if (values[i] !== undefined) result[key] = values[i];
  });
  return result;
}

/** A deferred fragment of an object: its fields run now, its entry waits for its parent's payload. */
function deferFragment(
  run: Run,
  type: GraphQLObjectType,
  source: unknown,
  path: Path | undefined,
  deferred: Collected['deferred'][number],
  parent: Part,
): void {
  const fragmentPath = responsePathAsArray(path);
  const part = new Part(parent, undefined, fragmentPath, new Group('defer', parent, fragmentPath, deferred.label));
  if (!run.publisher.add(part)) return;
  void (async () => {
    let data: Record<string, unknown> | null;
    try {
      data = await executeFields(run, type, source, path, { fields: deferred.fields, deferred: [] }, part);
    } catch (error) {
      part.errors.push(error as GraphQLError);
      run.publisher.dropUnder(part, part.path);
      data = null;
    }
    run.publisher.done(part, entry(part, { data }, deferred.label));
  })();
}

function entry(part: Part, value: Record<string, unknown>, label: string | undefined): Record<string, unknown> {
  const result: Record<string, unknown> = { ...value, path: part.path };
  if (label !== undefined) result.label = label;
  if (part.errors.length > 0) result.errors = part.errors;
  return result;
}

/** One field: resolved and completed, or null with its error (thrown on when the field is non-null). */
async function executeField(run: Run, type: GraphQLObjectType, source: unknown, fieldNodes: FieldNode[], path: Path, part: Part): Promise<unknown> {
  const def = fieldDefinition(run.schema, type, fieldNodes[0].name.value);
  if (def === undefined) return undefined;
  const info = resolveInfoOf(run, def, fieldNodes, type, path);
  try {
    if (run.signal?.aborted) throw run.signal.reason;
    const args = getArgumentValues(def, fieldNodes[0], run.variableValues);
    const resolved = await (def.resolve ?? run.fieldResolver)(source, args, run.contextValue, info);
    return await completeValue(run, def.type, info, path, resolved, part);
  } catch (raw) {
    return fieldError(run, raw, def.type, info, path, part);
  }
}

/** A located field error: thrown on from a non-null position, else recorded and the value is null. */
function fieldError(run: Run, raw: unknown, type: GraphQLOutputType, info: GraphQLResolveInfo, path: Path, part: Part): null {
  const error = locatedError(raw, info.fieldNodes, responsePathAsArray(path));
  if (isNonNullType(type)) throw error;
  part.errors.push(error);
  run.publisher.dropUnder(part, responsePathAsArray(path));
  return null;
}

async function completeValue(run: Run, type: GraphQLOutputType, info: GraphQLResolveInfo, path: Path, value: unknown, part: Part): Promise<unknown> {
  if (value instanceof Error) throw value;
  if (isNonNullType(type)) {
    const completed = await completeValue(run, type.ofType, info, path, value, part);
    if (completed === null) throw new Error(`Cannot return null for non-nullable field ${info.parentType.name}.${info.fieldName}.`);
    return completed;
  }
  if (value == null) return null;
  if (isListType(type)) return completeList(run, type, info, path, value, part);
  if (isLeafType(type)) {
    const serialized = type.serialize(value);
    if (serialized == null)
      throw new Error(`Expected \`${type.name}.serialize(${String(value)})\` to return non-nullable value, returned: ${String(serialized)}`);
    return serialized;
  }
  let objectType: GraphQLObjectType;
  if (isAbstractType(type)) {
    const name = await (type.resolveType ?? run.typeResolver)(value, run.contextValue, info, type);
    if (name == null) {
      throw new GraphQLError(
        `Abstract type "${type.name}" must resolve to an Object type at runtime for field "${info.parentType.name}.${info.fieldName}". Either the "${type.name}" type should provide a "resolveType" function or each possible type should provide an "isTypeOf" function.`,
        { nodes: info.fieldNodes },
      );
    }
    const runtime = run.schema.getType(name);
    if (runtime == null)
      throw new GraphQLError(`Abstract type "${type.name}" was resolved to a type "${name}" that does not exist inside the schema.`, {
        nodes: info.fieldNodes,
      });
    if (!isObjectType(runtime)) throw new GraphQLError(`Abstract type "${type.name}" was resolved to a non-object type "${name}".`, { nodes: info.fieldNodes });
    if (!run.schema.isSubType(type, runtime))
      throw new GraphQLError(`Runtime Object type "${name}" is not a possible type for "${type.name}".`, { nodes: info.fieldNodes });
    objectType = runtime;
  } else objectType = type;
  if (objectType.isTypeOf && !(await objectType.isTypeOf(value, run.contextValue, info))) {
    throw new GraphQLError(`Expected value of type "${objectType.name}" but got: ${String(value)}.`, { nodes: info.fieldNodes });
  }
  return executeFields(run, objectType, value, path, subfields(run, objectType, info.fieldNodes), part);
}

interface StreamSettings {
  initialCount: number;
  label: string | undefined;
}

function streamSettings(run: Run, info: GraphQLResolveInfo): StreamSettings | undefined {
  const stream = getDirectiveValues(GraphQLStreamDirective, info.fieldNodes[0], run.variableValues) as
    | { if: boolean; initialCount: number; label?: string }
    | undefined;
  if (stream === undefined || stream.if === false) return undefined;
  if (!(stream.initialCount >= 0)) throw new GraphQLError('initialCount must be a positive integer', { nodes: info.fieldNodes });
  return { initialCount: stream.initialCount, label: stream.label };
}

async function completeList(
  run: Run,
  type: GraphQLList<GraphQLOutputType>,
  info: GraphQLResolveInfo,
  path: Path,
  value: unknown,
  part: Part,
): Promise<unknown[]> {
  const stream = streamSettings(run, info);
  const itemType = type.ofType;
  const items: Promise<unknown>[] = [];
  if (typeof value === 'object' && value !== null && Symbol.asyncIterator in value) {
    const iterator = (value as AsyncIterable<unknown>)[Symbol.asyncIterator]();
    for (let index = 0; ; index++) {
      if (stream !== undefined && index >= stream.initialCount) {
        streamFrom(run, iterator, index, itemType, info, path, stream.label, part);
        break;
      }
      let step: IteratorResult<unknown>;
      try {
        step = await iterator.next();
      } catch (raw) {
        items.push(Promise.resolve(fieldError(run, raw, itemType, info, at(path, index, undefined), part)));
        break;
      }
      if (step.done) break;
      items.push(completeItem(run, itemType, info, at(path, index, undefined), step.value, part));
    }
    return Promise.all(items);
  }
  if (typeof value !== 'object' || value === null || !(Symbol.iterator in value)) {
    throw new GraphQLError(`Expected Iterable, but did not find one for field "${info.parentType.name}.${info.fieldName}".`);
  }
  let index = 0;
  let previous: Part | undefined;
  let group: Group | undefined;
  for (const item of value as Iterable<unknown>) {
    if (stream !== undefined && index >= stream.initialCount) {
      group ??= new Group('stream', part, responsePathAsArray(path), stream.label);
      previous = streamItem(run, part, previous, group, itemType, info, at(path, index, undefined), item, stream.label);
    } else items.push(completeItem(run, itemType, info, at(path, index, undefined), item, part));
    index++;
  }
  // Every item has joined the stream.
  if (group !== undefined) group.closed = true;
  return Promise.all(items);
}

async function completeItem(run: Run, itemType: GraphQLOutputType, info: GraphQLResolveInfo, path: Path, item: unknown, part: Part): Promise<unknown> {
  try {
    return await completeValue(run, itemType, info, path, await item, part);
  } catch (raw) {
    return fieldError(run, raw, itemType, info, path, part);
  }
}

/** One streamed item: completed now, sent after `after`; `items: null` when a non-null item fails. */
function streamItem(
  run: Run,
  parent: Part,
  after: Part | undefined,
  group: Group,
  itemType: GraphQLOutputType,
  info: GraphQLResolveInfo,
  path: Path,
  item: unknown,
  label: string | undefined,
): Part {
  const part = new Part(parent, after, responsePathAsArray(path), group);
  if (run.publisher.add(part)) void completeStreamed(run, part, itemType, info, path, item, label);
  return part;
}

async function completeStreamed(
  run: Run,
  part: Part,
  itemType: GraphQLOutputType,
  info: GraphQLResolveInfo,
  path: Path,
  item: unknown,
  label: string | undefined,
) {
  let items: unknown[] | null;
  try {
    items = [await completeItem(run, itemType, info, path, item, part)];
  } catch (error) {
    part.errors.push(error as GraphQLError);
    run.publisher.dropUnder(part, part.path);
    items = null;
  }
  run.publisher.done(part, entry(part, { items }, label));
}

/** The rest of an async iterable, one entry per item, pulled one after another. */
function streamFrom(
  run: Run,
  iterator: AsyncIterator<unknown>,
  start: number,
  itemType: GraphQLOutputType,
  info: GraphQLResolveInfo,
  listPath: Path,
  label: string | undefined,
  parent: Part,
): void {
  let after: Part | undefined;
  const group = new Group('stream', parent, responsePathAsArray(listPath), label);
  const pull = (index: number): void => {
    // Stands for the next item until the iterator gives it; ends with no entry when it is done.
    const waiting = new Part(parent, after, responsePathAsArray(at(listPath, index, undefined)), group);
    waiting.iterator = iterator;
    if (!run.publisher.add(waiting)) {
      void iterator.return?.()?.catch(() => {});
      return;
    }
    after = waiting;
    iterator.next().then(
      (step) => {
        if (step.done) return run.publisher.done(waiting, null);
        if (waiting.dropped) return;
        void completeStreamed(run, waiting, itemType, info, at(listPath, index, undefined), step.value, label);
        pull(index + 1);
      },
      (raw: unknown) => {
        const error = locatedError(raw, info.fieldNodes, waiting.path);
        waiting.errors.push(error);
        run.publisher.done(waiting, entry(waiting, { items: null }, label));
      },
    );
  };
  pull(start);
}
