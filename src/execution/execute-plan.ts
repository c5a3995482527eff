// Runs an OperationPlan and writes the `data` value straight as JSON text: no result objects, no
// second walk to serialize them. Resolvers, arguments, null propagation and error reporting follow
// graphql-js 16 exactly for synchronous resolvers; whatever this does not reproduce byte for byte
// (promises, custom serializers returning nothing, failing isTypeOf, non-string type names) stops
// the run with `bail`, and the caller executes the operation with graphql-js instead.
import { GraphQLError, defaultTypeResolver, getArgumentValues, isObjectType, locatedError, type GraphQLResolveInfo, type GraphQLSchema } from 'graphql';
import type { Completion, FieldPlan, OperationPlan } from './plan.ts';
import { resolveInfoOf, type OperationScope } from './field-definition.ts';
import { resolveInfoExtras, type Variables } from './graphql-compat.ts';
import { codegenAvailable, generateFieldsWriter, type FieldsWriter, type InterpreterParts } from './codegen.ts';

/** Thrown when graphql-js has to execute the operation instead. */
export const bail: unique symbol = Symbol('bail to graphql-js');

/** graphql-js's response path: a linked list from the field back to the root. */
interface Path {
  readonly prev: Path | undefined;
  readonly key: string | number;
  readonly typename: string | undefined;
}

/**
 * Stands for the path of an object whose fields are all plain property reads: nothing asks for
 * it unless something goes wrong, and then the run hands over to graphql-js (which reports it).
 */
const lazyPath: Path = { prev: undefined, key: '', typename: undefined };

/** A path that would have to be derived from `lazyPath` cannot be: let graphql-js run instead. */
function realPath(path: Path | undefined): Path | undefined {
  if (path === lazyPath) throw bail;
  return path;
}

/** The path object for `field` under `parentPath`, or `lazyPath` where nothing below can ask for it. */
function pathFor(field: FieldPlan, parentPath: Path | undefined): Path {
  if (field.lazy) return lazyPath;
  return { prev: realPath(parentPath), key: field.key, typename: field.parentType.name };
}

/** One plan being run: what every resolver's info carries about the operation, and the errors so far. */
interface Run extends OperationScope {
  readonly contextValue: unknown;
  /** The variables as a plain map, for the plan's own argument readers. */
  readonly coerced: Readonly<Record<string, unknown>>;
  readonly errors: GraphQLError[];
  sawPromise: boolean;
}

export interface PlanResult {
  /** The `data` value as JSON text. */
  data: string;
  /** Field errors in the order graphql-js reports them. */
  errors: GraphQLError[];
}

/**
 * Executes `plan` with already coerced variables. Throws `bail` (after marking `plan.async` when a
 * resolver returned a promise) when graphql-js must run the operation instead.
 */
export function executePlan(
  plan: OperationPlan,
  schema: GraphQLSchema,
  rootValue: unknown,
  contextValue: unknown,
  variables: Variables,
  signal?: AbortSignal,
): PlanResult {
  const run: Run = {
    schema,
    fragments: plan.fragments,
    rootValue,
    contextValue,
    operation: plan.operation,
    variableValues: variables.executor,
    coerced: variables.coerced,
    infoExtras: resolveInfoExtras(signal),
    errors: [],
    sawPromise: false,
  };
  let data: string;
  try {
    data = executeFields(run, plan.fields, rootValue, undefined, '');
  } catch (error) {
    if (error === bail) {
      if (run.sawPromise) plan.async = true;
      throw error;
    }
    // A non-null root field failed: graphql-js answers `data: null` with the (already located) error.
    run.errors.push(error as GraphQLError);
    data = 'null';
  }
  return { data, errors: run.errors };
}

// Every writer below takes the response text written so far (`out`) and returns it with its own part
// appended. Threading one string through keeps the result a single left-leaning rope, which V8
// flattens for writing at about two thirds of the cost of a tree of nested parts. Strings are
// values, so a caller whose callee threw still holds its text as it was before the call.

function executeFields(run: Run, fields: readonly FieldPlan[], source: unknown, path: Path | undefined, out: string): string {
  if (generatedCode && typeof source === 'object' && source !== null) {
    const writer = generatedWriter(fields);
    if (writer !== null) return writer(run, source, path, out);
  }
  return interpretFields(run, fields, source, path, out);
}

function interpretFields(run: Run, fields: readonly FieldPlan[], source: unknown, path: Path | undefined, out: string): string {
  out += '{';
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i];
    out += field.prefix;
    if (field.typename !== null) out += field.typename;
    else if (field.lane !== null && typeof source === 'object' && source !== null) {
      out = laneValue(run, field, (source as Record<string, unknown>)[field.fieldName], path, out);
    } else out = executeField(run, field, source, path, out);
  }
  return out + '}';
}

// The generated writer of a field list (src/execution/codegen.ts), kept on the list itself: null where
// none is generated. A list is planned once per document, so this is made once per selection.
const writerKey = Symbol('fields writer');
type WithWriter = { [writerKey]?: FieldsWriter<Run, Path> | null };
let generatedCode = codegenAvailable;

function generatedWriter(fields: readonly FieldPlan[]): FieldsWriter<Run, Path> | null {
  return ((fields as WithWriter)[writerKey] ??= generateFieldsWriter(fields, interpreterParts));
}

/**
 * Whether field lists run as generated code where the runtime allows it (the default). Both ways give
 * the same bytes; tests compare them, and a host can keep to the interpreter.
 */
export function useGeneratedCode(on: boolean): void {
  generatedCode = on && codegenAvailable;
}

const interpreterParts: InterpreterParts<Run, Path> = {
  executeField,
  leafValue,
  resolvedValue,
  resolverError,
  resolveInfo,
  interpretFields,
  isPlainData,
  quoted,
  lazyPath,
  bail,
};

/**
 * A lazy field holding plain data objects, or a list of them, its value already read: when it is what
 * it usually is, its fields are written directly; anything else takes the general steps. Nothing below
 * asks for a path, so any failure hands over to graphql-js.
 */
function laneValue(run: Run, field: FieldPlan, value: unknown, parentPath: Path | undefined, out: string): string {
  const completion = field.completion;
  try {
    if (completion.kind === 'object') {
      if (isPlainData(value)) return executeFields(run, completion.fields, value, lazyPath, out);
    } else if (completion.kind === 'list' && Array.isArray(value)) {
      const item = completion.item;
      if (item.kind === 'object') {
        const fields = item.fields;
        out += '[';
        for (let i = 0; i < value.length; i++) {
          if (i > 0) out += ',';
          const element: unknown = value[i];
          out = isPlainData(element)
            ? executeFields(run, fields, element, lazyPath, out)
            : complete(run, field, item, completion.itemNonNull, element, lazyPath, lazyPath, parentPath, out);
        }
        return out + ']';
      }
    }
    if (typeof value === 'function') throw bail; // a method: graphql-js calls it with an info object
    return complete(run, field, completion, field.nonNull, value, lazyPath, lazyPath, parentPath, out);
  } catch (raw) {
    if (raw === bail) throw raw;
    // Reporting this needs the path that was never built.
    throw bail;
  }
}

/** An object completion can take as it is: not null, an Error or a promise. */
function isPlainData(value: unknown): value is object {
  return typeof value === 'object' && value !== null && !(value instanceof Error) && typeof (value as { then?: unknown }).then !== 'function';
}

function executeField(run: Run, field: FieldPlan, source: unknown, parentPath: Path | undefined, out: string): string {
  const plainLeaf = field.plainLeaf;
  if (plainLeaf !== null) {
    // A plain property holding a leaf value: no arguments to coerce, no resolver, no path unless it fails.
    let value: unknown;
    if ((typeof source === 'object' && source !== null) || typeof source === 'function') {
      value = (source as Record<string, unknown>)[field.fieldName];
      if (typeof value === 'string' && plainLeaf === 'string') return out + quoted(value);
    }
    return leafValue(run, field, source, value, parentPath, out);
  }
  return resolveField(run, field, source, parentPath, out);
}

/** A plain leaf field's value, already read from `source`, completed as graphql-js would. */
function leafValue(run: Run, field: FieldPlan, source: unknown, value: unknown, parentPath: Path | undefined, out: string): string {
  if (typeof value === 'function') return resolveField(run, field, source, parentPath, out); // a method: reads it again, as graphql-js does
  try {
    return complete(run, field, field.completion, field.nonNull, value, undefined, undefined, parentPath, out);
  } catch (raw) {
    return out + fieldError(run, field, raw, undefined, parentPath);
  }
}

/** graphql-js's executeField: arguments, resolver (or default property read), completion, errors. */
function resolveField(run: Run, field: FieldPlan, source: unknown, parentPath: Path | undefined, out: string): string {
  // Leaves read by the default resolver never need their path unless they fail.
  let path: Path | undefined = field.completion.kind === 'leaf' && field.resolve === undefined ? undefined : pathFor(field, parentPath);
  let value: unknown;
  try {
    if (field.argsError !== null) throw field.argsError;
    const args = field.staticArgs ?? field.readArgs?.(run.coerced) ?? getArgumentValues(field.def, field.fieldNodes[0], run.variableValues);
    if (field.resolve !== undefined) {
      path ??= { prev: realPath(parentPath), key: field.key, typename: field.parentType.name };
      value = field.resolve(source, args, run.contextValue, resolveInfo(run, field, path));
    } else if ((typeof source === 'object' && source !== null) || typeof source === 'function') {
      value = (source as Record<string, unknown>)[field.fieldName];
      if (typeof value === 'function') {
        if (path === lazyPath) throw bail;
        path ??= { prev: realPath(parentPath), key: field.key, typename: field.parentType.name };
        value = (source as Record<string, (...a: unknown[]) => unknown>)[field.fieldName](args, run.contextValue, resolveInfo(run, field, path));
      }
    }
  } catch (raw) {
    return resolverError(run, field, raw, path, parentPath, out);
  }
  return resolvedValue(run, field, value, path, parentPath, out);
}

/** A field's resolved value completed, or, when completing it fails, the field's error. */
function resolvedValue(run: Run, field: FieldPlan, value: unknown, path: Path | undefined, parentPath: Path | undefined, out: string): string {
  try {
    return complete(run, field, field.completion, field.nonNull, value, path, path, parentPath, out);
  } catch (raw) {
    return out + fieldError(run, field, raw, path, parentPath);
  }
}

/** A resolver (or the arguments for it) threw: the field's error, or null propagation upwards. */
function resolverError(run: Run, field: FieldPlan, raw: unknown, path: Path | undefined, parentPath: Path | undefined, out: string): string {
  return out + fieldError(run, field, raw, path, parentPath);
}

/** A field failed: locate the error; a non-null field passes it up, a nullable one records it and is null. */
function fieldError(run: Run, field: FieldPlan, raw: unknown, path: Path | undefined, parentPath: Path | undefined): string {
  if (raw === bail) throw raw;
  const located = realPath(path) ?? { prev: realPath(parentPath), key: field.key, typename: field.parentType.name };
  const error = locatedError(raw, field.fieldNodes, pathToArray(located));
  if (field.nonNull) throw error;
  run.errors.push(error);
  return 'null';
}

/**
 * `out` followed by `value` as JSON text for `completion`. `path` is the value's own path (undefined
 * for a leaf that has not needed it); `fieldPath`/`parentPath` let an info object be built for the
 * field on demand.
 */
function complete(
  run: Run,
  field: FieldPlan,
  completion: Completion,
  nonNull: boolean,
  value: unknown,
  path: Path | undefined,
  fieldPath: Path | undefined,
  parentPath: Path | undefined,
  out: string,
): string {
  if (typeof value === 'object' || typeof value === 'function') {
    if (value === null) {
      if (nonNull) throw nonNullError(field);
      return out + 'null';
    }
    if (value instanceof Error) throw value;
    if (typeof (value as { then?: unknown }).then === 'function') return abandonPromise(run, value as PromiseLike<unknown>);
  } else if (value === undefined) {
    if (nonNull) throw nonNullError(field);
    return out + 'null';
  }
  switch (completion.kind) {
    case 'leaf':
      return out + completeLeaf(completion, value);
    case 'list':
      return completeList(run, field, completion, value, path!, fieldPath, parentPath, out);
    case 'object': {
      const type = completion.type;
      if (type.isTypeOf) checkIsTypeOf(run, field, type.isTypeOf(value, run.contextValue, fieldInfo(run, field, fieldPath, parentPath)));
      return executeFields(run, completion.fields, value, path, out);
    }
    case 'abstract':
      return completeAbstract(run, field, completion, value, path, fieldPath, parentPath, out);
  }
}

function completeLeaf(completion: Extract<Completion, { kind: 'leaf' }>, value: unknown): string {
  switch (completion.fast) {
    case 'string':
      if (typeof value === 'string') return quoted(value);
      break;
    case 'boolean':
      if (typeof value === 'boolean') return value ? 'true' : 'false';
      break;
    case 'int':
      if (typeof value === 'number' && Number.isInteger(value) && value <= 2147483647 && value >= -2147483648) {
        return JSON.stringify(value);
      }
      break;
    case 'float':
      if (typeof value === 'number' && Number.isFinite(value)) return JSON.stringify(value);
      break;
  }
  const serialized = completion.type.serialize(value);
  if (serialized == null) throw bail; // graphql-js words this error with its own `inspect`
  const text = JSON.stringify(serialized) as string | undefined;
  if (text === undefined) throw bail;
  return text;
}

function nonNullError(field: FieldPlan): Error {
  return new Error(`Cannot return null for non-nullable field ${field.parentType.name}.${field.def.name}.`);
}

function completeList(
  run: Run,
  field: FieldPlan,
  completion: Extract<Completion, { kind: 'list' }>,
  value: unknown,
  path: Path,
  fieldPath: Path | undefined,
  parentPath: Path | undefined,
  out: string,
): string {
  let items: ArrayLike<unknown>;
  if (Array.isArray(value)) items = value;
  else if (typeof value === 'object' && typeof (value as Iterable<unknown>)[Symbol.iterator] === 'function') {
    items = Array.from(value as Iterable<unknown>);
  } else {
    throw new GraphQLError(`Expected Iterable, but did not find one for field "${field.parentType.name}.${field.def.name}".`);
  }
  const item = completion.item;
  const itemNonNull = completion.itemNonNull;
  const leafItems = item.kind === 'leaf';
  const lazyItems = !item.needsPath;
  // complete's object case, for items whose type does not check values with isTypeOf.
  const objectItems = item.kind === 'object' && !item.type.isTypeOf ? item.fields : null;
  const writeItem = objectItems !== null && generatedCode ? generatedWriter(objectItems) : null;
  out += '[';
  for (let i = 0; i < items.length; i++) {
    if (i > 0) out += ',';
    let itemPath: Path | undefined = leafItems ? undefined : lazyItems ? lazyPath : { prev: path, key: i, typename: undefined };
    try {
      const element = items[i];
      // An object item that is plain data needs none of complete's other cases.
      out =
        objectItems !== null && isPlainData(element)
          ? writeItem !== null
            ? writeItem(run, element, itemPath, out)
            : interpretFields(run, objectItems, element, itemPath, out)
          : complete(run, field, item, itemNonNull, element, itemPath, fieldPath, parentPath, out);
    } catch (raw) {
      if (raw === bail) throw raw;
      itemPath = realPath(itemPath) ?? { prev: realPath(path), key: i, typename: undefined };
      const error = locatedError(raw, field.fieldNodes, pathToArray(itemPath));
      if (itemNonNull) throw error;
      run.errors.push(error);
      out += 'null';
    }
  }
  return out + ']';
}

function completeAbstract(
  run: Run,
  field: FieldPlan,
  completion: Extract<Completion, { kind: 'abstract' }>,
  value: unknown,
  path: Path | undefined,
  fieldPath: Path | undefined,
  parentPath: Path | undefined,
  out: string,
): string {
  const abstract = completion.type;
  const info = fieldInfo(run, field, fieldPath, parentPath);
  const name: unknown = (abstract.resolveType ?? defaultTypeResolver)(value, run.contextValue, info, abstract);
  if (name != null && typeof (name as { then?: unknown }).then === 'function') return abandonPromise(run, name as PromiseLike<unknown>);
  if (name == null) {
    throw new GraphQLError(
      `Abstract type "${abstract.name}" must resolve to an Object type at runtime for field "${field.parentType.name}.${field.def.name}". Either the "${abstract.name}" type should provide a "resolveType" function or each possible type should provide an "isTypeOf" function.`,
      { nodes: field.fieldNodes },
    );
  }
  if (typeof name !== 'string') throw bail; // graphql-js quotes the value with its own `inspect`
  const fields = completion.byType.get(name);
  if (fields === undefined) {
    const nodes = field.fieldNodes;
    const runtimeType = run.schema.getType(name);
    if (runtimeType == null) {
      throw new GraphQLError(`Abstract type "${abstract.name}" was resolved to a type "${name}" that does not exist inside the schema.`, { nodes });
    }
    if (!isObjectType(runtimeType)) {
      throw new GraphQLError(`Abstract type "${abstract.name}" was resolved to a non-object type "${name}".`, { nodes });
    }
    throw new GraphQLError(`Runtime Object type "${runtimeType.name}" is not a possible type for "${abstract.name}".`, { nodes });
  }
  const runtimeType = run.schema.getType(name) as { isTypeOf?: (v: unknown, c: unknown, i: GraphQLResolveInfo) => unknown };
  if (runtimeType.isTypeOf) checkIsTypeOf(run, field, runtimeType.isTypeOf(value, run.contextValue, info));
  return executeFields(run, fields, value, path, out);
}

function checkIsTypeOf(run: Run, _field: FieldPlan, result: unknown): void {
  if (result != null && typeof (result as { then?: unknown }).then === 'function') abandonPromise(run, result as PromiseLike<unknown>);
  // graphql-js words a failed check with its own `inspect` of the value.
  if (!result) throw bail;
}

function abandonPromise(run: Run, promise: PromiseLike<unknown>): never {
  // graphql-js will run the resolvers again; this promise's outcome is not wanted, not even a rejection.
  promise.then(undefined, () => {});
  run.sawPromise = true;
  throw bail;
}

/** The info object for a field when only its parent path is at hand. */
function fieldInfo(run: Run, field: FieldPlan, fieldPath: Path | undefined, parentPath: Path | undefined): GraphQLResolveInfo {
  return resolveInfo(run, field, realPath(fieldPath) ?? { prev: realPath(parentPath), key: field.key, typename: field.parentType.name });
}

function resolveInfo(run: Run, field: FieldPlan, path: Path): GraphQLResolveInfo {
  return resolveInfoOf(run, field.def, field.fieldNodes, field.parentType, path);
}

// Short strings repeat across responses (codes, names, enum-like values): their JSON form is
// remembered, which is cheaper than JSON.stringify on each. Bounded: once full, strings not yet
// seen are simply escaped each time.
const quotedStrings = new Map<string, string>();
const maxQuotedStrings = 50_000;
const maxQuotedLength = 128;

function quoted(value: string): string {
  let json = quotedStrings.get(value);
  if (json === undefined) {
    json = JSON.stringify(value);
    if (value.length <= maxQuotedLength && quotedStrings.size < maxQuotedStrings) quotedStrings.set(value, json);
  }
  return json;
}

function pathToArray(path: Path | undefined): (string | number)[] {
  const keys: (string | number)[] = [];
  for (let p = path; p !== undefined; p = p.prev) keys.push(p.key);
  return keys.reverse();
}
