// Batched requests: a POST whose JSON body is an array of GraphQL requests (as Apollo Client's
// BatchHttpLink sends them), answered with an array of results in the same order. Off by default, as
// in Yoga (`batching`) and Mercurius (`allowBatchedQueries`): one request then costs the server as
// much as `limit` of them, and rate limits that count requests count it once.
import type { GraphQLMediaType } from './negotiation.ts';
import { contentTypeOf } from './negotiation.ts';

/** What answerBatch needs of each operation's answer (responses.ts's Answer). */
interface ItemAnswer {
  body: string | ReadableStream<Uint8Array> | null;
}

export interface BatchingOptions {
  /** Most operations in one request; more is 413. Default 10 (Yoga's). */
  limit?: number;
}

/** Yoga's default limit. */
export const defaultBatchLimit = 10;

/** The operations of a batched request, as sent (each is checked like a single request's body). */
export class Batch {
  constructor(readonly items: readonly unknown[]) {}
}

/** The most operations a batch may hold; 0 when batching is off. */
export function batchLimitOf(option: BatchingOptions | boolean | undefined): number {
  if (option === undefined || option === false) return 0;
  const limit = option === true ? defaultBatchLimit : (option.limit ?? defaultBatchLimit);
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new TypeError(`createGraphQLHandler: batching.limit must be a positive integer (got ${limit})`);
  }
  return limit;
}

/**
 * Answers each operation in turn, one after another (a mutation sees the effects of those before
 * it), and joins their results into one JSON array, in the order sent. Each result is what the same
 * operation alone would get in its body, errors included; the batch itself is 200.
 */
export async function answerBatch(
  batch: Batch,
  mediaType: GraphQLMediaType,
  answerOne: (item: unknown) => ItemAnswer | Promise<ItemAnswer>,
): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  const bodies: string[] = [];
  for (const item of batch.items) {
    const answer = await answerOne(item);
    bodies.push(typeof answer.body === 'string' ? answer.body : JSON.stringify({ errors: [{ message: 'This operation cannot be answered in a batch' }] }));
  }
  return { status: 200, headers: { 'content-type': contentTypeOf(mediaType) }, body: `[${bodies.join(',')}]` };
}
