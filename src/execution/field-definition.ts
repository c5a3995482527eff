// A field as graphql-js executes it: which definition a selection on an object type runs (the
// introspection fields on the query root, __typename anywhere, else the type's own field), and the info
// its resolver gets. Shared by the plan executor and the incremental executor.
import {
  SchemaMetaFieldDef,
  TypeMetaFieldDef,
  TypeNameMetaFieldDef,
  type FieldNode,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLResolveInfo,
  type GraphQLSchema,
  type ResponsePath,
} from 'graphql';
import type { ResolveInfoExtras } from './graphql-compat.ts';

/** What every resolver's info carries about the operation being run. */
export interface OperationScope extends Pick<GraphQLResolveInfo, 'schema' | 'fragments' | 'rootValue' | 'operation' | 'variableValues'> {
  /** What the installed graphql-js's info has beyond 16's (graphql-compat.ts), made once per run. */
  readonly infoExtras: ResolveInfoExtras;
}

/** The field `name` of `parentType`, or undefined for an unknown one (graphql-js skips it). */
export function fieldDefinition(schema: GraphQLSchema, parentType: GraphQLObjectType, name: string): GraphQLField<unknown, unknown> | undefined {
  if (name === SchemaMetaFieldDef.name && schema.getQueryType() === parentType) return SchemaMetaFieldDef;
  if (name === TypeMetaFieldDef.name && schema.getQueryType() === parentType) return TypeMetaFieldDef;
  if (name === TypeNameMetaFieldDef.name) return TypeNameMetaFieldDef;
  return parentType.getFields()[name];
}

/** The info graphql-js passes to the resolver of `def` at `path`. */
export function resolveInfoOf(
  scope: OperationScope,
  def: GraphQLField<unknown, unknown>,
  fieldNodes: readonly FieldNode[],
  parentType: GraphQLObjectType,
  path: ResponsePath,
): GraphQLResolveInfo {
  return {
    fieldName: def.name,
    fieldNodes,
    returnType: def.type,
    parentType,
    path,
    schema: scope.schema,
    fragments: scope.fragments,
    rootValue: scope.rootValue,
    operation: scope.operation,
    variableValues: scope.variableValues,
    getAbortSignal: scope.infoExtras.getAbortSignal,
    getAsyncHelpers: scope.infoExtras.getAsyncHelpers,
  } as GraphQLResolveInfo;
}
