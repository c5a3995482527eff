// Every answer the handler gives, as status, headers and body text, built here and nowhere else: the
// HTTP layer (production.ts) only adds caching and CORS headers and makes the web Response.
import { GraphQLError, type ExecutionResult } from 'graphql';
import { applicationJson, contentTypeOf, graphqlResponseJson, type GraphQLMediaType } from './negotiation.ts';
import type { FormatError } from './options.ts';
import { MalformedRequestError, RefusalError } from './request-errors.ts';
import type { AnswerKind } from './status-codes.ts';

/** What the handler answers, before the HTTP features add their headers. */
export interface Answer {
  status: number;
  /** Plain header names in lowercase; the HTTP layer adds to them. */
  headers: Record<string, string>;
  /** Text, or a stream of results (subscriptions and incremental delivery over SSE or multipart). */
  body: string | ReadableStream<Uint8Array> | null;
  /** For a streamed body: told of the Response made of it (so a server adapter may take the stream over). */
  madeInto?: (response: Response) => void;
  /** What a GraphQL response that is not a plain success says, for the 2026 draft's status codes (status-codes.ts). */
  kind?: AnswerKind;
}

export const jsonContentType = contentTypeOf(applicationJson);
const graphqlResponseContentType = contentTypeOf(graphqlResponseJson);

function ok(body: string, mediaType: GraphQLMediaType): Answer {
  return {
    status: 200,
    headers: { 'content-type': mediaType === applicationJson ? jsonContentType : graphqlResponseContentType },
    body,
  };
}

/** A `{ errors: [{ message }] }` body, the shape GraphQL clients already know how to show. */
export function errorBody(message: string): string {
  return JSON.stringify({ errors: [{ message }] });
}

/** A refusal the handler makes itself (404, 405, 413, 415, 500), always as application/json. */
export function refusal(status: number, message: string, headers?: Record<string, string>): Answer {
  return { status, headers: { 'content-type': jsonContentType, ...headers }, body: errorBody(message) };
}

/**
 * What was thrown while reading the request or its document. A plain Error is a request error, 400
 * whatever the media type; GraphQL errors (syntax, limits, persisted-query misses) are reported as
 * the GraphQL-over-HTTP spec asks for a request that fails before execution.
 */
export function thrownAnswer(error: unknown, mediaType: GraphQLMediaType, formatError: FormatError): Answer {
  if (error instanceof RefusalError) {
    const answer = errorsAnswer([error], mediaType, formatError, 'refused');
    answer.status = error.status;
    return answer;
  }
  if (error instanceof GraphQLError) return errorsAnswer([error], mediaType, formatError, 'request-error');
  if (error instanceof Error) {
    return {
      status: 400,
      headers: { 'content-type': jsonContentType },
      body: JSON.stringify({ errors: [formatError(error)] }, errorReplacer),
      kind: error instanceof MalformedRequestError ? 'invalid' : 'request-error',
    };
  }
  throw error;
}

/**
 * Errors before execution (syntax, validation, no such operation): 200 under application/json, 400
 * without `data` under application/graphql-response+json.
 */
export function errorsAnswer(errors: readonly GraphQLError[], mediaType: GraphQLMediaType, formatError: FormatError, kind: AnswerKind = 'invalid'): Answer {
  const answer = ok(JSON.stringify({ errors: errors.map(formatError) }, errorReplacer), mediaType);
  if (mediaType !== applicationJson) answer.status = 400;
  answer.kind = kind;
  return answer;
}

/** An execution result from graphql-js, serialized as graphql-js's clients expect it. */
export function resultAnswer(result: ExecutionResult, mediaType: GraphQLMediaType, formatError: FormatError): Answer {
  const answer = ok(resultJson(result, formatError), mediaType);
  // No data at all: graphql-js stopped before executing (variables that do not coerce, no operation to pick).
  if (result.data === undefined) answer.kind = 'invalid';
  else if (result.errors !== undefined && result.errors.length > 0) answer.kind = 'partial';
  return answer;
}

/** The JSON text of a result, its errors formatted (masked) first. */
export function resultJson(result: ExecutionResult, formatError: FormatError): string {
  return JSON.stringify(result.errors ? { ...result, errors: result.errors.map(formatError) } : result, errorReplacer);
}

/** The JSON text of errors alone, formatted. */
export function errorsJson(errors: readonly GraphQLError[], formatError: FormatError): string {
  return JSON.stringify(errors.map(formatError), errorReplacer);
}

/** A result the compiled plan wrote: `data` is JSON text already. Errors come first, as graphql-js orders them. */
export function writtenAnswer(data: string, errors: readonly GraphQLError[], mediaType: GraphQLMediaType, formatError: FormatError): Answer {
  if (errors.length === 0) return ok(`{"data":${data}}`, mediaType);
  const answer = ok(`{"errors":${JSON.stringify(errors.map(formatError), errorReplacer)},"data":${data}}`, mediaType);
  answer.kind = 'partial';
  return answer;
}

/** A body kept from an earlier answer (the response cache). */
export function cachedAnswer(body: string, mediaType: GraphQLMediaType): Answer {
  return ok(body, mediaType);
}

/** Plain Errors (a formatError may return one) are written as `{ message }` only: no stack, no name. */
function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error && !(value instanceof GraphQLError)) return { message: value.message };
  return value;
}
