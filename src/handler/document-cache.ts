import { GraphQLError, parse as graphqlParse, validate as graphqlValidate, type DocumentNode, type GraphQLSchema, type ParseOptions } from 'graphql';

/** Queries longer than this are parsed and validated every time rather than held in memory. */
export const maxCachedQueryLength = 64 * 1024;

/**
 * Validation costs ~100 µs per request against ~2 µs for parsing and ~15 µs for executing a small
 * query, so both are remembered per query text. The rules are fixed per handler, so the cache keys on
 * the query string (and the document that came out of it) alone, not on the rules array.
 */
export interface DocumentCache {
  parse: typeof graphqlParse;
  validate: typeof graphqlValidate;
  /** Number of query texts currently remembered. */
  readonly size: number;
  /** Whether `query` is remembered (its parse would be a hit); does not count as a use. */
  has(query: string): boolean;
}

interface Entry {
  parsed: DocumentNode | GraphQLError;
  /** The lookup count when the entry last moved to the newest place. */
  used: number;
}

interface Validation {
  schema: GraphQLSchema;
  errors: readonly GraphQLError[];
}

/** `parseOptions` (e.g. maxTokens) apply to every parse, cached or not; they are fixed per handler. */
export function createDocumentCache(maxEntries: number, parseOptions?: ParseOptions): DocumentCache {
  // A Map iterates in insertion order, so re-inserting an entry on a hit keeps the least recently used
  // one first. Re-inserting costs more than the lookup, so an entry moved within the last
  // maxEntries/2 lookups stays put: evicting it would take maxEntries newer insertions since its
  // move, so an entry used within the last maxEntries/2 lookups is still never the one evicted.
  const documents = new Map<string, Entry>();
  // Keyed on the cached document object, so entries vanish with it when the LRU evicts the query.
  const validations = new WeakMap<DocumentNode, Validation>();
  const fresh = maxEntries >> 1;
  let clock = 0;

  const parse: typeof graphqlParse = (source, options) => {
    if (maxEntries <= 0 || options !== undefined || typeof source !== 'string' || source.length > maxCachedQueryLength) {
      return graphqlParse(source, options ?? parseOptions);
    }
    clock++;
    let entry = documents.get(source);
    if (entry !== undefined) {
      if (clock - entry.used >= fresh) {
        documents.delete(source);
        documents.set(source, entry);
        entry.used = clock;
      }
    } else {
      let parsed: DocumentNode | GraphQLError;
      try {
        parsed = graphqlParse(source, parseOptions);
      } catch (error) {
        if (!(error instanceof GraphQLError)) throw error;
        parsed = error; // syntax errors are as repeatable as documents
      }
      entry = { parsed, used: clock };
      documents.set(source, entry);
      if (documents.size > maxEntries) documents.delete(documents.keys().next().value as string);
    }
    if (entry.parsed instanceof GraphQLError) throw entry.parsed;
    return entry.parsed;
  };

  const validate: typeof graphqlValidate = (schema, document, rules, options, typeInfo) => {
    if (maxEntries <= 0 || options !== undefined || typeInfo !== undefined) {
      return graphqlValidate(schema, document, rules, options, typeInfo);
    }
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
