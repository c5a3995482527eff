// The GraphQL clients people use, subscribing over plain HTTP to the chat app on the Node server:
// Apollo Client's HttpLink (multipart, subscriptionSpec=1.0) and urql's fetchSubscriptions (SSE).
// Each must receive every event in order, and leaving must release the subscription on the server.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { Client as UrqlClient, fetchExchange } from '@urql/core';
import { postMessage, until } from '../fixtures/ws/clients.ts';
import { startNode, type Target } from '../fixtures/ws/runtimes.ts';

const ADDED = 'subscription Added($room: String!) { messageAdded(room: $room) { id text author } }';

/** Collects a client's results; `events()` are the message texts received so far. */
class Collected {
  readonly results: unknown[] = [];
  errors: unknown[] = [];
  completed = false;
  texts(): string[] {
    return this.results.map((result) => (result as { data?: { messageAdded?: { text: string } } }).data?.messageAdded?.text ?? '?');
  }
}

describe('GraphQL clients subscribing over HTTP streams', () => {
  let target: Target;
  before(async () => {
    target = await startNode();
  });
  after(async () => {
    await target?.close();
  });

  /** Waits for the server to hold no subscription and no stream. */
  const released = () =>
    until(
      async () => {
        const counts = await target.counts();
        return counts.live === 0 && counts.streams.open === 0;
      },
      10_000,
      'the unsubscribed stream to be released',
    );

  /** Posts `texts` to `room` once the server holds the client's stream, and waits for them all. */
  async function deliver(room: string, collected: Collected, texts: string[]): Promise<void> {
    await until(async () => (await target.counts()).streams.open === 1, 10_000, 'the client to open its stream');
    for (const text of texts) assert.equal((await postMessage(target.http, room, text)).status, 200);
    await until(() => collected.results.length >= texts.length || collected.errors.length > 0, 10_000, `${texts.length} events`);
    assert.deepEqual(collected.errors, []);
    assert.deepEqual(collected.texts(), texts, 'every event, in order, nothing else');
  }

  it("Apollo Client's HttpLink receives a subscription as multipart, and unsubscribing releases it", async () => {
    const client = new ApolloClient({ link: new HttpLink({ uri: target.http }), cache: new InMemoryCache() });
    const collected = new Collected();
    const subscription = client.subscribe({ query: gql(ADDED), variables: { room: 'apollo-client' } }).subscribe({
      next: (result) => {
        if (result.error) collected.errors.push(result.error);
        else collected.results.push(result);
      },
      error: (error) => collected.errors.push(error),
      complete: () => {
        collected.completed = true;
      },
    });
    try {
      await deliver('apollo-client', collected, ['first', 'second', 'third']);
    } finally {
      subscription.unsubscribe();
      client.stop();
    }
    await released();
  });

  it("urql's fetchSubscriptions receives a subscription as server-sent events, and unsubscribing releases it", async () => {
    const client = new UrqlClient({ url: target.http, exchanges: [fetchExchange], fetchSubscriptions: true });
    const collected = new Collected();
    const { unsubscribe } = client.subscription(ADDED, { room: 'urql' }).subscribe((result) => {
      if (result.error) collected.errors.push(result.error);
      else collected.results.push(result);
    });
    try {
      await deliver('urql', collected, ['uno', 'dos', 'tres']);
    } finally {
      unsubscribe();
    }
    await released();
  });
});
