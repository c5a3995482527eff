// Which definition a field selection on an object type executes, as graphql-js looks it up: the
// introspection fields on the query root, __typename anywhere, else the type's own field.
import { SchemaMetaFieldDef, TypeMetaFieldDef, TypeNameMetaFieldDef, type GraphQLField, type GraphQLObjectType, type GraphQLSchema } from 'graphql';

/** The field `name` of `parentType`, or undefined for an unknown one (graphql-js skips it). */
export function fieldDefinition(schema: GraphQLSchema, parentType: GraphQLObjectType, name: string): GraphQLField<unknown, unknown> | undefined {
  if (name === SchemaMetaFieldDef.name && schema.getQueryType() === parentType) return SchemaMetaFieldDef;
  if (name === TypeMetaFieldDef.name && schema.getQueryType() === parentType) return TypeMetaFieldDef;
  if (name === TypeNameMetaFieldDef.name) return TypeNameMetaFieldDef;
  return parentType.getFields()[name];
}
