// A query operation turned into a tree of field plans once per document, so that executing it again
// does none of graphql-js's per-request bookkeeping: fields are collected (fragments, aliases,
// merging, constant @skip/@include), definitions looked up and argument literals coerced ahead of time.
import {
  GraphQLError,
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  Kind,
  SchemaMetaFieldDef,
  TypeMetaFieldDef,
  TypeNameMetaFieldDef,
  getArgumentValues,
  getDirectiveValues,
  isAbstractType,
  isLeafType,
  isListType,
  isNonNullType,
  isObjectType,
  specifiedScalarTypes,
  typeFromAST,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLAbstractType,
  type GraphQLField,
  type GraphQLFieldResolver,
  type GraphQLLeafType,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type InlineFragmentNode,
  type OperationDefinitionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql';
import { fieldDefinition } from './field-definition.ts';
import { argumentsReader, usesVariables, variablesReader, type ArgumentsReader, type VariablesReader } from './input-coercion.ts';

/** How a resolved value becomes JSON text; built once per return type of each field. */
export type Completion = (
  | { kind: 'leaf'; type: GraphQLLeafType; fast: 'string' | 'boolean' | 'int' | 'float' | null }
  | { kind: 'list'; item: Completion; itemNonNull: boolean }
  | { kind: 'object'; type: GraphQLObjectType; fields: FieldPlan[] }
  | { kind: 'abstract'; type: GraphQLAbstractType; byType: Map<string, FieldPlan[]> }
) & {
  /**
   * Completing a value needs its response path when nothing goes wrong: something below resolves
   * beyond a plain property read, or checks its type. Without it the path is only built on failure.
   */
  needsPath: boolean;
};

export interface FieldPlan {
  /** The response key (alias or field name). */
  readonly key: string;
  /** The key already written as JSON with its separator: `"key":` or `,"key":`. */
  readonly prefix: string;
  readonly fieldNodes: readonly FieldNode[];
  readonly parentType: GraphQLObjectType;
  readonly def: GraphQLField<unknown, unknown>;
  /** The field's own resolver; undefined means graphql-js's default (a property read). */
  readonly resolve: GraphQLFieldResolver<unknown, unknown> | undefined;
  /** `__typename`: answered from the parent type without a resolver. */
  readonly typename: string | null;
  /** Arguments coerced at plan time when they use no variables; null when they must be coerced per run. */
  readonly staticArgs: Record<string, unknown> | null;
  /** Reads the arguments from the run's variables when they use some; null when graphql-js must. */
  readonly readArgs: ArgumentsReader | null;
  /** The error coercing the arguments gave at plan time (graphql-js reports it as a field error). */
  readonly argsError: GraphQLError | null;
  /** The field's name, read from the source by the default resolver. */
  readonly fieldName: string;
  /**
   * A leaf read by the default resolver with arguments known at plan time: the common case of a
   * plain property, which execution handles without the general machinery.
   */
  readonly plainLeaf: 'string' | 'boolean' | 'int' | 'float' | 'other' | null;
  /** Read by the default resolver with arguments known at plan time, and nothing below needs a path. */
  readonly lazy: boolean;
  /**
   * A lazy field holding an object (`object`) or a list of objects (`objectList`): execution reads
   * these inline, the way most data is shaped, without the general completion steps.
   */
  readonly lane: 'object' | 'objectList' | null;
  readonly nonNull: boolean;
  readonly completion: Completion;
}

export interface OperationPlan {
  readonly operation: OperationDefinitionNode;
  readonly rootType: GraphQLObjectType;
  readonly fields: FieldPlan[];
  readonly fragments: Record<string, FragmentDefinitionNode>;
  /** True once an execution met a promise: later requests go straight to graphql-js. */
  async: boolean;
  /**
   * Introspection alone (`__schema`, `__type`, `__typename` at the root) with no variables: its answer
   * depends on the schema only, which never changes under a handler, so the first one is kept.
   */
  readonly schemaOnly: boolean;
  /** Coerces the operation's variables when they are all scalars or enums; null when graphql-js must. */
  readonly readVariables: VariablesReader | null;
}

/** Thrown (and caught) inside the planner when the document needs variables to decide @skip/@include. */
const needsVariables = Symbol('needs variables');

interface PlanContext {
  schema: GraphQLSchema;
  fragments: Record<string, FragmentDefinitionNode>;
}

/**
 * Plans the operation graphql-js would pick for `operationName`, or returns null when there is
 * nothing to plan: no such operation (graphql-js reports that), not a query, no query type, or
 * @skip/@include that depend on variables.
 */
export function planOperation(schema: GraphQLSchema, document: DocumentNode, operationName: string | null | undefined): OperationPlan | null {
  let operation: OperationDefinitionNode | undefined;
  const fragments: Record<string, FragmentDefinitionNode> = Object.create(null);
  for (const definition of document.definitions) {
    if (definition.kind === Kind.OPERATION_DEFINITION) {
      if (operationName == null) {
        if (operation !== undefined) return null;
        operation = definition;
      } else if (definition.name?.value === operationName) {
        operation = definition;
      }
    } else if (definition.kind === Kind.FRAGMENT_DEFINITION) {
      fragments[definition.name.value] = definition;
    }
  }
  if (operation === undefined || operation.operation !== 'query') return null;
  const rootType = schema.getQueryType();
  if (rootType == null) return null;
  const context: PlanContext = { schema, fragments };
  try {
    const fields = planFields(context, rootType, [operation.selectionSet]);
    const schemaOnly =
      fields.length > 0 &&
      !operation.variableDefinitions?.length &&
      fields.every((f) => f.def === SchemaMetaFieldDef || f.def === TypeMetaFieldDef || f.def === TypeNameMetaFieldDef);
    const readVariables = variablesReader(schema, operation.variableDefinitions ?? []);
    return { operation, rootType, fields, fragments, async: false, schemaOnly, readVariables };
  } catch (error) {
    if (error === needsVariables) return null;
    throw error;
  }
}

/** The fields of `selectionSets` that apply to `type`, merged by response key, in graphql-js order. */
export function planFields(context: PlanContext, type: GraphQLObjectType, selectionSets: readonly SelectionSetNode[]): FieldPlan[] {
  const collected = new Map<string, FieldNode[]>();
  const visited = new Set<string>();
  for (const selectionSet of selectionSets) collect(context, type, selectionSet, collected, visited);
  const plans: FieldPlan[] = [];
  for (const [key, fieldNodes] of collected) {
    const def = fieldDefinition(context.schema, type, fieldNodes[0].name.value);
    if (def === undefined) continue; // graphql-js skips unknown fields (validation already reported them)
    const nonNull = isNonNullType(def.type);
    const args = staticArguments(def, fieldNodes[0]);
    const completion = planCompletion(context, def.type, fieldNodes);
    const resolve = def === TypeNameMetaFieldDef ? undefined : def.resolve;
    const lazy = resolve === undefined && args !== null && !(args instanceof GraphQLError) && !completion.needsPath;
    plans.push({
      key,
      prefix: `${plans.length === 0 ? '' : ','}${JSON.stringify(key)}:`,
      fieldNodes,
      parentType: type,
      def,
      resolve,
      typename: def === TypeNameMetaFieldDef ? JSON.stringify(type.name) : null,
      staticArgs: args instanceof GraphQLError ? null : args,
      readArgs: args === null ? argumentsReader(def, fieldNodes[0]) : null,
      argsError: args instanceof GraphQLError ? args : null,
      fieldName: def.name,
      plainLeaf: completion.kind === 'leaf' && resolve === undefined && args !== null && !(args instanceof GraphQLError) ? (completion.fast ?? 'other') : null,
      lazy,
      lane: !lazy ? null : completion.kind === 'object' ? 'object' : completion.kind === 'list' && completion.item.kind === 'object' ? 'objectList' : null,
      nonNull,
      completion,
    });
  }
  return plans;
}

function planCompletion(context: PlanContext, type: GraphQLOutputType, fieldNodes: readonly FieldNode[]): Completion {
  const nullable = isNonNullType(type) ? type.ofType : type;
  if (isListType(nullable)) {
    const item = planCompletion(context, nullable.ofType, fieldNodes);
    return { kind: 'list', item, itemNonNull: isNonNullType(nullable.ofType), needsPath: item.needsPath };
  }
  if (isLeafType(nullable)) return { kind: 'leaf', type: nullable, fast: fastLeaf(nullable), needsPath: false };
  const selectionSets = fieldNodes.flatMap((node) => (node.selectionSet ? [node.selectionSet] : []));
  if (isObjectType(nullable)) {
    const fields = planFields(context, nullable, selectionSets);
    // A field that resolves beyond a plain property read needs the object's response path.
    const fieldsNeedPath = fields.some((f) => f.typename === null && !f.lazy);
    return { kind: 'object', type: nullable, fields, needsPath: fieldsNeedPath || nullable.isTypeOf != null };
  }
  if (isAbstractType(nullable)) {
    // Planned per runtime type on first sight; the possible types are few and fixed.
    const byType = new Map<string, FieldPlan[]>();
    for (const possible of context.schema.getPossibleTypes(nullable)) {
      byType.set(possible.name, planFields(context, possible, selectionSets));
    }
    return { kind: 'abstract', type: nullable, byType, needsPath: true };
  }
  throw new TypeError(`Cannot plan output type ${String(nullable)}`);
}

/** Built-in scalars whose serialize is the identity for values of the matching JS type. */
function fastLeaf(type: GraphQLLeafType): 'string' | 'boolean' | 'int' | 'float' | null {
  switch (type.name) {
    case 'String':
    case 'ID':
      return isSpecifiedScalar(type) ? 'string' : null;
    case 'Boolean':
      return isSpecifiedScalar(type) ? 'boolean' : null;
    case 'Int':
      return isSpecifiedScalar(type) ? 'int' : null;
    case 'Float':
      return isSpecifiedScalar(type) ? 'float' : null;
    default:
      return null;
  }
}

function isSpecifiedScalar(type: GraphQLLeafType): boolean {
  // A schema may define its own scalar named String; only graphql-js's own may take the shortcut.
  return specifiedScalars.has(type);
}

const specifiedScalars = new Set<unknown>(specifiedScalarTypes);

function staticArguments(def: GraphQLField<unknown, unknown>, node: FieldNode): Record<string, unknown> | GraphQLError | null {
  if (node.arguments?.some((argument) => usesVariables(argument.value))) return null;
  try {
    return getArgumentValues(def, node);
  } catch (error) {
    if (error instanceof GraphQLError) return error;
    throw error;
  }
}

function collect(context: PlanContext, type: GraphQLObjectType, selectionSet: SelectionSetNode, fields: Map<string, FieldNode[]>, visited: Set<string>): void {
  for (const selection of selectionSet.selections) {
    switch (selection.kind) {
      case Kind.FIELD: {
        if (!included(selection)) continue;
        const key = selection.alias ? selection.alias.value : selection.name.value;
        const list = fields.get(key);
        if (list !== undefined) list.push(selection);
        else fields.set(key, [selection]);
        break;
      }
      case Kind.INLINE_FRAGMENT:
        if (!included(selection) || !conditionMatches(context.schema, selection, type)) continue;
        collect(context, type, selection.selectionSet, fields, visited);
        break;
      case Kind.FRAGMENT_SPREAD: {
        const name = selection.name.value;
        if (visited.has(name) || !included(selection)) continue;
        visited.add(name);
        const fragment = context.fragments[name];
        if (!fragment || !conditionMatches(context.schema, fragment, type)) continue;
        collect(context, type, fragment.selectionSet, fields, visited);
        break;
      }
    }
  }
}

/** @skip/@include with literal conditions are settled here; with variables the plan is abandoned. */
function included(node: { directives?: readonly { name: { value: string }; arguments?: readonly { value: ValueNode }[] }[] }): boolean {
  if (!node.directives || node.directives.length === 0) return true;
  for (const directive of node.directives) {
    const name = directive.name.value;
    if ((name === 'skip' || name === 'include') && directive.arguments?.some((a) => usesVariables(a.value))) {
      throw needsVariables;
    }
  }
  const skip = getDirectiveValues(GraphQLSkipDirective, node as FieldNode);
  if (skip?.if === true) return false;
  const include = getDirectiveValues(GraphQLIncludeDirective, node as FieldNode);
  return include?.if !== false;
}

function conditionMatches(schema: GraphQLSchema, fragment: InlineFragmentNode | FragmentDefinitionNode, type: GraphQLObjectType): boolean {
  const condition = fragment.typeCondition;
  if (!condition) return true;
  const conditionType = typeFromAST(schema, condition);
  if (conditionType === type) return true;
  return isAbstractType(conditionType) ? schema.isSubType(conditionType, type) : false;
}
