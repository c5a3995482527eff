import { GraphQLError } from 'graphql';
import type { FormatError } from './options.ts';

export const maskedMessage = 'Unexpected error.';

/**
 * Whether an error is an unexpected failure inside a resolver: a field error (it has a path) whose
 * cause is not a GraphQLError. A resolver that throws a GraphQLError means it for the client (e.g.
 * the countries API's VALIDATION_ERROR); syntax, validation, variable and request errors carry no
 * path and are about the request itself, so they are never masked.
 */
export function isUnexpectedError(error: GraphQLError): boolean {
  return error.path !== undefined && error.originalError != null && !(error.originalError instanceof GraphQLError);
}

/** The client's view of an unexpected error: same path and locations, no detail. */
export function maskError(error: GraphQLError): GraphQLError {
  return new GraphQLError(maskedMessage, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
  });
}

/**
 * The formatError the handler uses: masks unexpected resolver errors (reporting the originals to
 * `onMasked`) before the user's own formatError sees them.
 */
export function createFormatError(mask: boolean, onMasked: (error: GraphQLError) => void, userFormatError: FormatError | undefined): FormatError | undefined {
  if (!mask) return userFormatError;
  return (error) => {
    let shown = error;
    if (error instanceof GraphQLError && isUnexpectedError(error)) {
      try {
        onMasked(error);
      } catch {
        // reporting must not break the response
      }
      shown = maskError(error);
    }
    return userFormatError ? userFormatError(shown) : shown;
  };
}
