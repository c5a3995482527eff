// Options of the WebSocket side on the Node server: context from connectionParams, onConnect reading
// the upgrade request's headers, extra validation rules, and shutdown closing sockets with 1001.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { serve } from '@hono/node-server';
import { GraphQLError, GraphQLObjectType, GraphQLSchema, GraphQLString, type ValidationRule } from 'graphql';
import WebSocket from 'ws';
import { createApp } from '../../node/graphql/app.ts';
import { attachGraphQLWebSocket, type AttachedGraphQLWebSocket } from '../../node/graphql/websocket.ts';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import { RawSocket, RecordedSubscription, graphqlWsClient, within } from '../fixtures/ws/clients.ts';

const schema = new GraphQLSchema({
  query: new GraphQLObjectType({
    name: 'Query',
    fields: {
      whoami: { type: GraphQLString, resolve: (_root, _args, context: { user?: string; agent?: string }) => context.user ?? null },
      agent: { type: GraphQLString, resolve: (_root, _args, context: { user?: string; agent?: string }) => context.agent ?? null },
    },
  }),
});

const noIntrospection: ValidationRule = (context) => ({
  Field(node) {
    if (node.name.value.startsWith('__schema')) context.reportError(new GraphQLError('Introspection is disabled here', { nodes: node }));
  },
});

/** A `ws` client that sends an extra header with the upgrade. */
const withHeader = (name: string, value: string) =>
  class extends WebSocket {
    constructor(url: string, protocols?: string | string[]) {
      super(url, protocols, { headers: { [name]: value } });
    }
  };

describe('GraphQL over WebSocket options (Node)', () => {
  let server: Server;
  let ws: AttachedGraphQLWebSocket;
  let url = '';

  before(async () => {
    server = serve({ fetch: createApp(createGraphQLHandler({ schema })).fetch, port: 0, hostname: '127.0.0.1' }) as Server;
    await within(new Promise((resolve) => server.once('listening', resolve)), 5000, 'the server to listen');
    ws = attachGraphQLWebSocket(server, {
      schema,
      validationRules: [noIntrospection],
      onConnect: (ctx) => ctx.extra.request?.headers.get('x-api-key') === 'let-me-in',
      context: (ctx) => ({ user: ctx.connectionParams?.user, agent: ctx.extra.request?.headers.get('x-api-key') }),
    });
    url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
  });
  after(async () => {
    await ws?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  it('builds the context from connectionParams and the upgrade request', async () => {
    const client = graphqlWsClient(url, { webSocketImpl: withHeader('x-api-key', 'let-me-in'), connectionParams: { user: 'ada' } });
    try {
      const result = await new RecordedSubscription(client, '{ whoami agent }').next(5000);
      assert.deepEqual(result.data, { whoami: 'ada', agent: 'let-me-in' });
    } finally {
      await client.dispose();
    }
  });

  it('onConnect refuses a client without the header (4403)', async () => {
    const raw = await new RawSocket(url).open();
    raw.send({ type: 'connection_init', payload: { user: 'eve' } });
    assert.equal((await raw.closeCode()).code, 4403);
  });

  it('applies extra validation rules to operations over the socket', async () => {
    const client = graphqlWsClient(url, { webSocketImpl: withHeader('x-api-key', 'let-me-in') });
    try {
      const introspection = new RecordedSubscription(client, '{ __schema { queryType { name } } }');
      await introspection.settled(5000);
      assert.match(String((introspection.error as { message: string }[])[0]?.message), /Introspection is disabled here/);
    } finally {
      await client.dispose();
    }
  });

  it('close() ends open sockets with 1001 and the server stops taking upgrades', async () => {
    const raw = await new RawSocket(url).open();
    const extra = attachGraphQLWebSocket(server, { schema, path: '/other' });
    assert.equal(extra.server.openSockets, 0);
    await extra.close();
    await ws.close();
    assert.equal((await raw.closeCode()).code, 1001);
    const refused = new WebSocket(url, 'graphql-transport-ws');
    const outcome = await within(
      new Promise<string>((resolve) => {
        refused.once('open', () => resolve('open'));
        refused.once('error', () => resolve('refused'));
        refused.once('unexpected-response', (_req, res) => resolve(`status ${res.statusCode}`));
      }),
      5000,
      'the upgrade after close()',
    );
    refused.terminate();
    assert.notEqual(outcome, 'open');
  });
});
