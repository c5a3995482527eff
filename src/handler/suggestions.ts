import { GraphQLError } from 'graphql';
import type { FormatError } from './options.ts';

// graphql-js appends " Did you mean …?" to validation and coercion errors, naming fields, arguments,
// types and enum values close to what was sent: with introspection off that reads the schema out
// name by name. graphql 17 can leave them out itself (`hideSuggestions`), graphql 16 cannot, so the
// handler removes them from every error it reports, the same way on both. Names in a suggestion are
// GraphQL names, always quoted, so the pattern ends where graphql-js's list ends.
const quotedName = '"[_A-Za-z][_0-9A-Za-z]*"';
const suggestion = new RegExp(` Did you mean (?:[a-z][a-z ]*? )?${quotedName}(?:,? (?:or )?${quotedName})*\\?`, 'g');
// graphql 17 goes on after a suggestion with " Found: …" (", found: …" when it has none to give).
const suggestionBeforeFound = new RegExp(`\\.${suggestion.source} Found: `, 'g');

/** The message without any "Did you mean …?", or the same string when there is none. */
export function withoutSuggestions(message: string): string {
  if (!message.includes(' Did you mean ')) return message;
  return message.replace(suggestionBeforeFound, ', found: ').replace(suggestion, '');
}

/** The error with its message's suggestions removed (the same error when it had none). */
export function withoutSuggestionsIn(error: GraphQLError): GraphQLError;
export function withoutSuggestionsIn(error: Readonly<GraphQLError | Error>): GraphQLError | Error;
export function withoutSuggestionsIn(error: Readonly<GraphQLError | Error>): GraphQLError | Error {
  const message = withoutSuggestions(error.message);
  if (message === error.message) return error as GraphQLError | Error;
  if (!(error instanceof GraphQLError)) return new Error(message);
  return new GraphQLError(message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions: error.extensions,
  });
}

/** A formatError that strips suggestions before `next` sees the error. */
export function hidingSuggestions(next: FormatError): FormatError {
  return (error) => next(withoutSuggestionsIn(error));
}
