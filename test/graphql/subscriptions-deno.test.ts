// GraphQL subscriptions over WebSocket on Deno: real graphql-ws clients (with `ws`) over real sockets.
import { subscriptionSuite } from '../fixtures/ws/suite.ts';
import { startDeno } from '../fixtures/ws/runtimes.ts';

subscriptionSuite('Deno', startDeno);
