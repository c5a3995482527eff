// Variables and arguments coerced by readers made once per plan, for the shapes clients send most:
// scalars and enums passed by variable. A reader gives what graphql-js's getVariableValues and
// getArgumentValues give, or undefined for anything it does not settle itself (an invalid value, a
// missing required one), so that graphql-js runs then and reports the error in its own words.
import {
  Kind,
  isEnumType,
  isNonNullType,
  isScalarType,
  typeFromAST,
  valueFromAST,
  type FieldNode,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLLeafType,
  type GraphQLSchema,
  type ValueNode,
  type VariableDefinitionNode,
} from 'graphql';

/** The coerced variables, or undefined when graphql-js must coerce them. */
export type VariablesReader = (inputs: Readonly<Record<string, unknown>>) => Record<string, unknown> | undefined;
/** A field's arguments from coerced variables, or undefined when graphql-js must read them. */
export type ArgumentsReader = (variables: Readonly<Record<string, unknown>> | null | undefined) => Record<string, unknown> | undefined;

const hasOwn = Object.prototype.hasOwnProperty;

interface VariableStep {
  readonly name: string;
  readonly leaf: GraphQLLeafType;
  readonly nonNull: boolean;
  readonly hasDefault: boolean;
  readonly defaultValue: unknown;
}

/** A reader for `definitions` when every variable is a scalar or an enum (non-null or not); else null. */
export function variablesReader(schema: GraphQLSchema, definitions: readonly VariableDefinitionNode[]): VariablesReader | null {
  const steps: VariableStep[] = [];
  for (const definition of definitions) {
    const type = typeFromAST(schema, definition.type) as GraphQLInputType | undefined;
    const leaf = leafOf(type);
    if (type === undefined || leaf === undefined) return null;
    let defaultValue: unknown;
    if (definition.defaultValue !== undefined) {
      defaultValue = valueFromAST(definition.defaultValue, type);
      if (defaultValue === undefined) return null;
    }
    steps.push({ name: definition.variable.name.value, ...leaf, hasDefault: definition.defaultValue !== undefined, defaultValue });
  }
  return (inputs) => {
    const coerced: Record<string, unknown> = {};
    for (const step of steps) {
      if (!hasOwn.call(inputs, step.name)) {
        if (step.hasDefault) coerced[step.name] = step.defaultValue;
        else if (step.nonNull) return undefined;
        continue;
      }
      const value = inputs[step.name];
      if (value === null || value === undefined) {
        if (step.nonNull) return undefined;
        coerced[step.name] = null;
        continue;
      }
      let parsed: unknown;
      try {
        parsed = step.leaf.parseValue(value);
      } catch {
        return undefined;
      }
      if (parsed === undefined) return undefined;
      coerced[step.name] = parsed;
    }
    return coerced;
  };
}

type ArgumentStep =
  | { readonly kind: 'constant'; readonly name: string; readonly value: unknown }
  | { readonly kind: 'variable'; readonly name: string; readonly variable: string; readonly nonNull: boolean; readonly defaultValue: unknown };

/**
 * A reader for the arguments of `node` when each is a literal without variables or a variable on its
 * own (the usual `country(code: $code)`); else null.
 */
export function argumentsReader(def: GraphQLField<unknown, unknown>, node: FieldNode): ArgumentsReader | null {
  const given = new Map<string, ValueNode>();
  for (const argument of node.arguments ?? []) given.set(argument.name.value, argument.value);
  const steps: ArgumentStep[] = [];
  // In the definition's order, as graphql-js builds the object.
  for (const arg of def.args) {
    const valueNode = given.get(arg.name);
    const nonNull = isNonNullType(arg.type);
    if (valueNode === undefined) {
      if (arg.defaultValue !== undefined) steps.push({ kind: 'constant', name: arg.name, value: arg.defaultValue });
      else if (nonNull) return null;
      continue;
    }
    if (valueNode.kind === Kind.VARIABLE) {
      steps.push({ kind: 'variable', name: arg.name, variable: valueNode.name.value, nonNull, defaultValue: arg.defaultValue });
      continue;
    }
    if (usesVariables(valueNode)) return null;
    const value = valueFromAST(valueNode, arg.type);
    if (value === undefined || (value === null && nonNull)) return null;
    steps.push({ kind: 'constant', name: arg.name, value });
  }
  return (variables) => {
    if (variables === null || variables === undefined) return undefined;
    const args: Record<string, unknown> = {};
    for (const step of steps) {
      if (step.kind === 'constant') {
        args[step.name] = step.value;
        continue;
      }
      if (!hasOwn.call(variables, step.variable)) {
        if (step.defaultValue !== undefined) args[step.name] = step.defaultValue;
        else if (step.nonNull) return undefined;
        continue;
      }
      const value = variables[step.variable];
      if (value === undefined || (value === null && step.nonNull)) return undefined;
      args[step.name] = value;
    }
    return args;
  };
}

/** Whether a literal refers to a variable anywhere inside it. */
export function usesVariables(value: ValueNode): boolean {
  switch (value.kind) {
    case Kind.VARIABLE:
      return true;
    case Kind.LIST:
      return value.values.some(usesVariables);
    case Kind.OBJECT:
      return value.fields.some((field) => usesVariables(field.value));
    default:
      return false;
  }
}

function leafOf(type: GraphQLInputType | undefined): { leaf: GraphQLLeafType; nonNull: boolean } | undefined {
  if (type === undefined) return undefined;
  const nonNull = isNonNullType(type);
  const named = nonNull ? type.ofType : type;
  return isScalarType(named) || isEnumType(named) ? { leaf: named, nonNull } : undefined;
}
