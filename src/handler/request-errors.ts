import { GraphQLError, type GraphQLErrorOptions } from 'graphql';

/**
 * A body or URL that was read (valid JSON) but is not a GraphQL-over-HTTP request: no `query`, a
 * `variables` that is not an object, an array where batching is off. A request error (400), or 422
 * under the 2026 draft's status codes.
 */
export class MalformedRequestError extends Error {
  override name = 'MalformedRequestError';
}

/**
 * A GraphQL error that refuses the request with a status of its own, under either set of status
 * codes (an unknown trusted document is 404, a freeform query where only trusted ones run 400 or
 * 403, as Apollo Router answers them). The body is a GraphQL response with this one error.
 */
export class RefusalError extends GraphQLError {
  constructor(
    message: string,
    readonly status: number,
    options?: GraphQLErrorOptions,
  ) {
    super(message, options);
  }
}
