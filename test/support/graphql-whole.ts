// graphql-js's `graphql()` for a schema that defines @defer and @stream (the served countries schema):
// graphql 17's `execute` refuses such a schema, so the operation runs as the endpoint runs it for a
// client that wants one whole result (src/execution/graphql-compat.ts), on 16 and 17 alike.
import { parse, validate, type ExecutionResult, type GraphQLSchema } from 'graphql';
import { executeWhole } from '../../src/execution/graphql-compat.ts';

export async function graphqlWhole(args: { schema: GraphQLSchema; source: string; variableValues?: Record<string, unknown> }): Promise<ExecutionResult> {
  let document;
  try {
    document = parse(args.source);
  } catch (error) {
    return { errors: [error as never] };
  }
  const errors = validate(args.schema, document);
  if (errors.length > 0) return { errors };
  return executeWhole({ schema: args.schema, document, variableValues: args.variableValues });
}
