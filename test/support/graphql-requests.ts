// Building web Requests for the in-process GraphQL handler tests.
import { GraphQLNonNull, GraphQLObjectType, GraphQLSchema, GraphQLString, GraphQLInt, GraphQLList } from 'graphql';

export const endpoint = 'http://localhost/graphql';
export const graphqlResponseJson = 'application/graphql-response+json';

export function getRequest(
  params: { query?: string; variables?: unknown; operationName?: string; extensions?: unknown },
  headers: Record<string, string> = {},
): Request {
  const url = new URL(endpoint);
  if (params.query !== undefined) url.searchParams.set('query', params.query);
  if (params.variables !== undefined) url.searchParams.set('variables', JSON.stringify(params.variables));
  if (params.operationName !== undefined) url.searchParams.set('operationName', params.operationName);
  if (params.extensions !== undefined) url.searchParams.set('extensions', JSON.stringify(params.extensions));
  return new Request(url, { headers });
}

export function postRequest(body: unknown, headers: Record<string, string> = {}): Request {
  return new Request(endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/**
 * A read-only schema (no mutation type) whose resolvers count their calls, so a test can tell a
 * cached response from an executed one.
 */
export function createReadOnlySchema() {
  const calls = { greeting: 0 };
  const schema = new GraphQLSchema({
    query: new GraphQLObjectType({
      name: 'Query',
      fields: {
        greeting: {
          type: new GraphQLNonNull(GraphQLString),
          args: { name: { type: GraphQLString } },
          resolve: (_root, args: { name?: string | null }) => {
            calls.greeting++;
            return `Hello, ${args.name ?? 'world'}`;
          },
        },
        sum: {
          type: GraphQLInt,
          args: { values: { type: new GraphQLList(new GraphQLNonNull(GraphQLInt)) } },
          resolve: (_root, args: { values?: number[] | null }) => (args.values ?? []).reduce((a, b) => a + b, 0),
        },
        fails: {
          type: GraphQLString,
          resolve: () => {
            throw new Error('database password is hunter2');
          },
        },
      },
    }),
  });
  return { schema, calls };
}
