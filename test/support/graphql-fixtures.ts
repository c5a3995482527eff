// A tiny schema with a query and a mutation, for exercising the HTTP handler without the countries data.
import { GraphQLID, GraphQLInt, GraphQLNonNull, GraphQLObjectType, GraphQLSchema, GraphQLString } from 'graphql';
import { serverAudits, type AuditResult } from 'graphql-http';

export function createTestSchema(): { schema: GraphQLSchema; counter: () => number } {
  let count = 0;
  const Item = new GraphQLObjectType({
    name: 'Item',
    fields: {
      id: { type: new GraphQLNonNull(GraphQLID), resolve: () => 'item-1' },
      z: { type: GraphQLString, resolve: () => 'zed' },
      y: { type: GraphQLString, resolve: () => 'why' },
    },
  });
  const schema = new GraphQLSchema({
    query: new GraphQLObjectType({
      name: 'Query',
      fields: {
        hello: {
          type: new GraphQLNonNull(GraphQLString),
          args: { name: { type: GraphQLString } },
          resolve: (_root, args: { name?: string | null }) => `Hello, ${args.name ?? 'world'}`,
        },
        a: { type: GraphQLInt, resolve: () => 1 },
        b: { type: GraphQLInt, resolve: () => 2 },
        c: { type: GraphQLInt, resolve: () => 3 },
        boom: {
          type: GraphQLString,
          resolve: () => {
            throw new Error('boom');
          },
        },
        count: { type: new GraphQLNonNull(GraphQLInt), resolve: () => count },
        item: { type: Item, resolve: () => ({}) },
        viewer: { type: GraphQLString, resolve: (_root, _args, context: { user?: string } | undefined) => context?.user ?? null },
      },
    }),
    mutation: new GraphQLObjectType({
      name: 'Mutation',
      fields: {
        increment: {
          type: new GraphQLNonNull(GraphQLInt),
          args: { by: { type: GraphQLInt, defaultValue: 1 } },
          resolve: (_root, args: { by: number }) => (count += args.by),
        },
      },
    }),
  });
  return { schema, counter: () => count };
}

/** Runs every graphql-http server audit against `url` and returns all results. */
export async function runServerAudits(url: string, fetchFn: (input: string | URL | Request, init?: RequestInit) => Promise<Response>): Promise<AuditResult[]> {
  const audits = serverAudits({ url, fetchFn });
  const results: AuditResult[] = [];
  for (const audit of audits) results.push(await audit.fn());
  return results;
}

/** One line per audit that did not pass, naming it and saying why. */
export function describeFailures(results: AuditResult[]): string[] {
  return results.filter((r) => r.status !== 'ok').map((r) => `${r.status.toUpperCase()} ${r.id} ${r.name}: ${'reason' in r ? r.reason : ''}`);
}

/** Rejects with `message` unless `promise` settles within `ms`. */
export async function within<T>(ms: number, message: string, promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${message} (gave up after ${ms} ms)`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
