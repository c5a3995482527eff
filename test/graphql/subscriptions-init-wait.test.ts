// The wait for `connection_init` (connectionInitWaitTimeout) on the Node server: a socket that never
// initialises is closed with 4408; one that did stays open past the deadline and keeps working; and
// every closed socket is released from the server's count.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GraphQLObjectType, GraphQLSchema, GraphQLString } from 'graphql';
import { startServer, type RunningServer } from '../../node/graphql/app.ts';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import { RawSocket, until } from '../fixtures/ws/clients.ts';

const schema = new GraphQLSchema({
  query: new GraphQLObjectType({ name: 'Query', fields: { hello: { type: GraphQLString, resolve: () => 'world' } } }),
});

describe('GraphQL over WebSocket: waiting for connection_init (Node)', () => {
  let server: RunningServer;
  let url = '';

  before(async () => {
    server = await startServer({
      handler: createGraphQLHandler({ schema }),
      port: 0,
      hostname: '127.0.0.1',
      subscriptions: { schema, keepAlive: 0, connectionInitWaitTimeout: 300 },
    });
    url = server.url.replace(/^http/, 'ws');
  });
  after(async () => {
    await server?.close();
  });

  it('closes a socket that sends no connection_init with 4408, and not one that did', async () => {
    const initialised = await new RawSocket(url).open();
    initialised.send({ type: 'connection_init' });
    await initialised.waitFor('connection_ack');
    // Opened after the first, so its deadline passes after the first one's.
    const silent = await new RawSocket(url).open();
    assert.deepEqual(await silent.closeCode(10_000), { code: 4408, reason: 'Connection initialisation timeout' });

    assert.equal(initialised.socket.readyState, initialised.socket.OPEN);
    initialised.send({ type: 'subscribe', id: 'q', payload: { query: '{ hello }' } });
    assert.deepEqual((await initialised.waitFor('next')).payload, { data: { hello: 'world' } });
    initialised.terminate();
    await until(() => server.webSocketServer!.openSockets === 0, 10_000, 'both sockets to be released');
  });
});
