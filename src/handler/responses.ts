/** Response bodies the handler produces itself, outside graphql-http's result shapes. */

export const jsonContentType = 'application/json; charset=utf-8';

/** A `{ errors: [{ message }] }` body, the shape GraphQL clients already know how to show. */
export function errorBody(message: string): string {
  return JSON.stringify({ errors: [{ message }] });
}

// `Response` is looked up on each call, never captured at load: @hono/node-server installs its faster
// Response global only when the server starts, which is after this module has been imported.
export function errorResponse(status: number, message: string, headers?: Record<string, string>): Response {
  return new Response(errorBody(message), {
    status,
    headers: { 'content-type': jsonContentType, ...headers },
  });
}
