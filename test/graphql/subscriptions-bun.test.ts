// GraphQL subscriptions over WebSocket on Bun (Bun.serve's upgrade and websocket handlers): real
// graphql-ws clients (with `ws`) over real sockets.
import { subscriptionSuite } from '../fixtures/ws/suite.ts';
import { startBun } from '../fixtures/ws/runtimes.ts';

subscriptionSuite('Bun', startBun);
