// The status codes of the GraphQL-over-HTTP draft as rewritten in 2026, for handlers that opt in with
// `httpStatusCodes: 'draft-2026'`. The default ('compatible') keeps the statuses graphql-http's audits
// and today's clients expect: a GraphQL response is 200 under application/json, and 400 without data
// under application/graphql-response+json.
import { contentTypeOf, graphqlResponseJson } from './negotiation.ts';

export type HttpStatusCodes = 'compatible' | 'draft-2026';

/**
 * What a GraphQL response that is not a plain success says. `request-error`: the request could not be
 * read as GraphQL (JSON or document syntax); `invalid`: it was read but cannot run (validation, no
 * operation to pick, variables that do not coerce, malformed parameters); `partial`: data with
 * errors; `refused`: a status of its own (RefusalError).
 */
export type AnswerKind = 'request-error' | 'invalid' | 'partial' | 'refused';

/** The part of an answer (responses.ts) the status codes look at. */
interface StatusedAnswer {
  status: number;
  headers: Record<string, string>;
  kind?: AnswerKind;
}

export const httpStatusCodeModes: readonly HttpStatusCodes[] = ['compatible', 'draft-2026'];

/** 294, the draft's "Partial Success": data and errors both. */
export const partialSuccess = 294;

const graphqlResponseContentType = contentTypeOf(graphqlResponseJson);

/**
 * The answer with the draft's status: 400 for a request that cannot be read (JSON or document
 * syntax), 422 for one that was read but cannot run (validation, operation selection, variable
 * coercion, malformed parameters), 294 for data with errors. Every media type gets these codes; a
 * GraphQL response that is not 2xx says it is one with application/graphql-response+json, as the
 * draft asks, so a client that accepts only application/json still reads its errors. Answers that
 * are not GraphQL responses (405, 413, 415, 406) keep their status and type.
 */
export function withDraftStatus<A extends StatusedAnswer>(answer: A): A {
  switch (answer.kind) {
    case undefined:
      return answer;
    case 'request-error':
      answer.status = 400;
      break;
    case 'invalid':
      answer.status = 422;
      break;
    case 'partial':
      answer.status = partialSuccess;
      break;
    case 'refused':
      break;
  }
  if (answer.status >= 300) answer.headers['content-type'] = graphqlResponseContentType;
  return answer;
}
