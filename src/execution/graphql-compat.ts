// The few places where graphql-js 16 and 17 differ for us, behind one face, decided once at load by the
// installed version (a peer dependency: `^16.15 || ^17`):
// - 17 keeps variables as `{ sources, coerced }` where 16 keeps the coerced map itself; its
//   getArgumentValues, getDirectiveValues and resolver info take that form (`ExecutorVariables`).
// - 17's resolver info has `getAbortSignal()` and `getAsyncHelpers()`.
// - 17's createSourceEventStream takes validated arguments.
// - 17's `execute` refuses a schema that defines @defer or @stream; a client asking for one whole
//   result then gets the operation run with both directives left out, which is what 16 does.
// Everything else both versions share is imported from 'graphql' directly where it is used.
import * as graphql from 'graphql';
import {
  BREAK,
  getVariableValues,
  typeFromAST,
  versionInfo,
  visit,
  type DirectiveNode,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type getArgumentValues,
  type GraphQLError,
  type GraphQLSchema,
  type VariableDefinitionNode,
} from 'graphql';

/** The installed graphql-js's major version. */
export const graphqlMajor: number = versionInfo.major;

/** Whether the installed graphql-js keeps variables as `{ sources, coerced }` (17 on). */
const splitVariables = graphqlMajor >= 17;

/** Variables in the form the installed graphql-js's own functions and resolver info take. */
export type ExecutorVariables = NonNullable<Parameters<typeof getArgumentValues>[2]>;

/** An operation's coerced variables: the plain map, and the form graphql-js takes. */
export interface Variables {
  readonly coerced: Readonly<Record<string, unknown>>;
  readonly executor: ExecutorVariables;
}

/** What getVariableValues returns on either version. */
type VariablesOutcome =
  | { errors: readonly GraphQLError[]; coerced?: undefined; variableValues?: undefined }
  | { errors?: undefined; coerced: ExecutorVariables; variableValues?: undefined }
  | { errors?: undefined; coerced?: undefined; variableValues: ExecutorVariables };

/** The variables of `definitions` coerced by graphql-js, or the errors it reports for them. */
export function coerceVariables(
  schema: GraphQLSchema,
  definitions: readonly VariableDefinitionNode[],
  inputs: Readonly<Record<string, unknown>>,
): Variables | readonly GraphQLError[] {
  const outcome = eitherVersion(getVariableValues(schema, definitions, inputs, { maxErrors: 50 }));
  if (outcome.errors !== undefined) return outcome.errors;
  const executor = outcome.variableValues ?? outcome.coerced;
  return { coerced: coercedOf(executor), executor };
}

/** Widened to both versions' shapes (a declared union would be narrowed to the installed one's). */
const eitherVersion = (outcome: VariablesOutcome): VariablesOutcome => outcome;

/** Whether coercion failed. */
export function isErrorList(value: Variables | readonly GraphQLError[]): value is readonly GraphQLError[] {
  return Array.isArray(value);
}

function coercedOf(executor: ExecutorVariables): Readonly<Record<string, unknown>> {
  return splitVariables ? (executor as unknown as { coerced: Record<string, unknown> }).coerced : (executor as unknown as Record<string, unknown>);
}

/** What 17 records about each variable, as its getVariableSignature makes it. */
interface VariableSignature {
  name: string;
  type: ReturnType<typeof typeFromAST>;
  default: { literal: NonNullable<VariableDefinitionNode['defaultValue']> } | undefined;
}
const signaturesByDefinitions = new WeakMap<readonly VariableDefinitionNode[], VariableSignature[]>();

/**
 * The graphql-js form of variables already coerced by our own reader (`coerced`, from `inputs`):
 * the map itself on 16; on 17 the map beside each variable's signature and raw value, as its
 * getVariableValues gives them.
 */
export function executorVariables(
  schema: GraphQLSchema,
  definitions: readonly VariableDefinitionNode[],
  inputs: Readonly<Record<string, unknown>>,
  coerced: Readonly<Record<string, unknown>>,
): ExecutorVariables {
  if (!splitVariables) return coerced as unknown as ExecutorVariables;
  let signatures = signaturesByDefinitions.get(definitions);
  if (signatures === undefined) {
    signatures = definitions.map((definition) => ({
      name: definition.variable.name.value,
      type: typeFromAST(schema, definition.type),
      default: definition.defaultValue && { literal: definition.defaultValue },
    }));
    signaturesByDefinitions.set(definitions, signatures);
  }
  const sources: Record<string, { signature: VariableSignature; value?: unknown }> = Object.create(null);
  for (const signature of signatures) {
    const value = Object.hasOwn(inputs, signature.name) ? inputs[signature.name] : undefined;
    sources[signature.name] = value === undefined ? { signature } : { signature, value };
  }
  return { sources, coerced } as unknown as ExecutorVariables;
}

/** No variables. */
export const emptyVariables: Variables = {
  coerced: {},
  executor: (splitVariables ? { sources: {}, coerced: {} } : {}) as unknown as ExecutorVariables,
};

const asyncHelpers = {
  promiseAll: <T>(values: ReadonlyArray<PromiseLike<T> | T>): Promise<T[]> => Promise.all(values),
  // Our executors finish when their results do; there is no later hook for tracked work to hold up.
  track: (_: readonly unknown[]): void => {},
};

/**
 * The members resolver info has on 17 beyond 16's: `getAbortSignal()` and `getAsyncHelpers()`. Given on
 * 16 as well (nothing there reads them), so every info object has one shape.
 */
export interface ResolveInfoExtras {
  readonly getAbortSignal: () => AbortSignal | undefined;
  readonly getAsyncHelpers: () => typeof asyncHelpers;
}

const getAsyncHelpers = () => asyncHelpers;
const unabortable: ResolveInfoExtras = { getAbortSignal: () => undefined, getAsyncHelpers };

/** The extra resolver info members for one execution that `signal` may abort (shared when none can). */
export function resolveInfoExtras(signal: AbortSignal | undefined): ResolveInfoExtras {
  return signal === undefined ? unabortable : { getAbortSignal: () => signal, getAsyncHelpers };
}

type PromiseOrValue<T> = T | Promise<T>;

/** The 17 functions used here, typed loosely enough that 16's exports fit too. */
interface GraphQLApi {
  validateSubscriptionArgs?(args: ExecutionArgs): readonly GraphQLError[] | object;
  createSourceEventStream(args: object): PromiseOrValue<AsyncIterable<unknown> | ExecutionResult>;
  experimentalExecuteIncrementally?(args: ExecutionArgs): PromiseOrValue<ExecutionResult | { initialResult: unknown }>;
  execute(args: ExecutionArgs): PromiseOrValue<ExecutionResult>;
}
// Read member by member, so that a bundler keeps these four alone: the namespace object handed on whole
// puts every export of graphql-js in what an edge isolate loads at start (49 KB more on 17). Bundled
// against graphql 16, esbuild warns that the two members only 17 has are undefined, as meant.
const api: GraphQLApi = {
  validateSubscriptionArgs: (graphql as Partial<GraphQLApi>).validateSubscriptionArgs,
  createSourceEventStream: graphql.createSourceEventStream as GraphQLApi['createSourceEventStream'],
  experimentalExecuteIncrementally: (graphql as Partial<GraphQLApi>).experimentalExecuteIncrementally,
  execute: graphql.execute,
};

/** The event stream of a subscription (graphql-js's createSourceEventStream on either version). */
export function createSourceEventStream(args: ExecutionArgs): PromiseOrValue<AsyncIterable<unknown> | ExecutionResult> {
  if (api.validateSubscriptionArgs === undefined) return api.createSourceEventStream(args);
  const validated = api.validateSubscriptionArgs(args);
  if (Array.isArray(validated)) return { errors: validated as readonly GraphQLError[] };
  return api.createSourceEventStream(validated);
}

const strippedDocuments = new WeakMap<DocumentNode, DocumentNode>();
const leaveOutIncremental = (node: DirectiveNode): null | undefined => (node.name.value === 'defer' || node.name.value === 'stream' ? null : undefined);
const incrementalDirectivesLeftOut = { Directive: leaveOutIncremental };

/** `document` without @defer and @stream (remembered per document). */
export function withoutIncrementalDirectives(document: DocumentNode): DocumentNode {
  let stripped = strippedDocuments.get(document);
  if (stripped === undefined) {
    let uses = false;
    visit(document, {
      Directive(node) {
        if (node.name.value !== 'defer' && node.name.value !== 'stream') return undefined;
        uses = true;
        return BREAK;
      },
    });
    stripped = uses ? visit(document, incrementalDirectivesLeftOut) : document;
    strippedDocuments.set(document, stripped);
  }
  return stripped;
}

/**
 * graphql-js's `execute` for one whole result: on 17, for a schema that defines @defer or @stream,
 * the operation without them (17's `execute` refuses such a schema; 16's ignores both directives).
 */
export function executeWhole(args: ExecutionArgs): PromiseOrValue<ExecutionResult> {
  const incremental = api.experimentalExecuteIncrementally;
  if (incremental === undefined || (!args.schema.getDirective('defer') && !args.schema.getDirective('stream'))) return api.execute(args);
  const result = incremental({ ...args, document: withoutIncrementalDirectives(args.document) });
  return result instanceof Promise ? result.then(whole) : whole(result);
}

function whole(result: ExecutionResult | { initialResult: unknown }): ExecutionResult {
  // Without the directives nothing is delivered later.
  if ('initialResult' in result) throw new Error('graphql-js returned an incremental result for an operation without @defer or @stream');
  return result;
}
