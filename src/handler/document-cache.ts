import { GraphQLError, parse as graphqlParse, validate as graphqlValidate, type DocumentNode, type GraphQLSchema, type ParseOptions } from 'graphql';
import { Lru } from './lru.ts';

/** Queries longer than this are parsed and validated every time rather than held in memory. */
export const maxCachedQueryLength = 64 * 1024;

/**
 * Validation costs ~100 µs per request against ~2 µs for parsing and ~15 µs for executing a small
 * query, so both are remembered per query text. The rules are fixed per handler, so the cache keys on
 * the query string (and the document that came out of it) alone, not on the rules array.
 */
/** graphql-js's validate as both 16 and 17 take it. */
export type Validate = (
  schema: GraphQLSchema,
  document: DocumentNode,
  rules?: Parameters<typeof graphqlValidate>[2],
  options?: Parameters<typeof graphqlValidate>[3],
) => readonly GraphQLError[];

export interface DocumentCache {
  parse: typeof graphqlParse;
  validate: Validate;
  /** Number of query texts currently remembered. */
  readonly size: number;
  /** Whether `query` is remembered (its parse would be a hit); does not count as a use. */
  has(query: string): boolean;
}

interface Validation {
  schema: GraphQLSchema;
  errors: readonly GraphQLError[];
}

/** `parseOptions` (e.g. maxTokens) apply to every parse, cached or not; they are fixed per handler. */
export function createDocumentCache(maxEntries: number, parseOptions?: ParseOptions): DocumentCache {
  const documents = new Lru<string, DocumentNode | GraphQLError>(maxEntries);
  // Keyed on the cached document object, so entries vanish with it when the LRU evicts the query.
  const validations = new WeakMap<DocumentNode, Validation>();

  const parse: typeof graphqlParse = (source, options) => {
    if (maxEntries <= 0 || options !== undefined || typeof source !== 'string' || source.length > maxCachedQueryLength) {
      return graphqlParse(source, options ?? parseOptions);
    }
    let parsed = documents.get(source);
    if (parsed === undefined) {
      try {
        parsed = graphqlParse(source, parseOptions);
      } catch (error) {
        if (!(error instanceof GraphQLError)) throw error;
        parsed = error; // syntax errors are as repeatable as documents
      }
      documents.set(source, parsed);
    }
    if (parsed instanceof GraphQLError) throw parsed;
    return parsed;
  };

  const validate: Validate = (schema, document, rules, options) => {
    if (maxEntries <= 0 || options !== undefined) return graphqlValidate(schema, document, rules, options);
    const known = validations.get(document);
    if (known !== undefined && known.schema === schema) return known.errors;
    const errors = graphqlValidate(schema, document, rules);
    validations.set(document, { schema, errors });
    return errors;
  };

  return {
    parse,
    validate,
    get size() {
      return documents.size;
    },
    has: (query) => documents.has(query),
  };
}
