// Compiled execution: per document and operation, a plan made once (plan.ts), run on every request by
// writing the response JSON directly (execute-plan.ts). Only for valid query operations whose
// resolvers are synchronous; whatever a plan cannot reproduce byte for byte is left to graphql-js.
import type { DocumentNode, GraphQLError, GraphQLSchema } from 'graphql';
import { coerceVariables as coerceWithGraphQL, emptyVariables, executorVariables, isErrorList, type Variables } from './graphql-compat.ts';
import { bail, executePlan, type PlanResult } from './execute-plan.ts';
import { planOperation, type OperationPlan } from './plan.ts';

export type { OperationPlan, PlanResult };

export interface CompiledExecution {
  /**
   * The plan of the operation graphql-js would pick in a valid document, or null when graphql-js
   * has to run it (not a query, no such operation, @skip/@include on variables, a resolver that
   * returned a promise before).
   */
  planFor(document: DocumentNode, operationName: string | null | undefined): OperationPlan | null;
  /**
   * Runs a plan: the written result, the variable errors graphql-js would report (it executes
   * nothing then either), or null when graphql-js has to run the operation after all.
   */
  run(
    plan: OperationPlan,
    rootValue: unknown,
    contextValue: unknown,
    variables: Record<string, unknown> | null | undefined,
  ): PlanResult | readonly GraphQLError[] | null;
}

type Plans = Map<string | null | undefined, OperationPlan | null>;

export function createCompiledExecution(schema: GraphQLSchema): CompiledExecution {
  // Plans live as long as their document: the handler's document cache holds it.
  const plansByDocument = new WeakMap<DocumentNode, Plans>();
  // The answers of introspection-only plans (see OperationPlan.schemaOnly), kept with their plan.
  const schemaAnswers = new WeakMap<OperationPlan, PlanResult>();

  return {
    planFor(document, operationName) {
      let plans = plansByDocument.get(document);
      if (plans === undefined) {
        plans = new Map();
        plansByDocument.set(document, plans);
      }
      let plan = plans.get(operationName);
      if (plan === undefined) {
        try {
          plan = planOperation(schema, document, operationName);
        } catch {
          plan = null; // graphql-js will tell the client what is wrong
        }
        // Operation names come from clients: only a few are remembered per document.
        if (plans.size < 16) plans.set(operationName, plan);
      }
      return plan?.async ? null : plan;
    },

    run(plan, rootValue, contextValue, variables) {
      if (plan.schemaOnly) {
        const kept = schemaAnswers.get(plan);
        if (kept !== undefined) return kept;
        const result = executePlanOrBail(plan, rootValue, contextValue, emptyVariables);
        if (result === null || result.errors.length > 0) return result;
        // The written text is a rope of many pieces; kept as one flat string, each answer copies it at once.
        const flat = { data: JSON.parse(JSON.stringify(result.data)) as string, errors: result.errors };
        schemaAnswers.set(plan, flat);
        return flat;
      }
      const coerced = coerceVariables(schema, plan, variables);
      if (isErrorList(coerced)) return coerced;
      return executePlanOrBail(plan, rootValue, contextValue, coerced);
    },
  };

  function executePlanOrBail(plan: OperationPlan, rootValue: unknown, contextValue: unknown, coerced: Variables): PlanResult | null {
    try {
      return executePlan(plan, schema, rootValue, contextValue, coerced);
    } catch (error) {
      if (error === bail) return null;
      throw error;
    }
  }
}

/**
 * The plan's variables as graphql-js coerces them, or the errors it reports: the plan's own reader
 * when it settles them, graphql-js otherwise.
 */
export function coerceVariables(
  schema: GraphQLSchema,
  plan: OperationPlan,
  variables: Record<string, unknown> | null | undefined,
): Variables | readonly GraphQLError[] {
  const definitions = plan.operation.variableDefinitions;
  // Without definitions graphql-js coerces nothing (extra variables are ignored) and gets {}.
  if (definitions === undefined || definitions.length === 0) return emptyVariables;
  const inputs = variables ?? {};
  const read = plan.readVariables?.(inputs);
  if (read !== undefined) return { coerced: read, executor: executorVariables(schema, definitions, inputs, read) };
  return coerceWithGraphQL(schema, definitions, inputs);
}
