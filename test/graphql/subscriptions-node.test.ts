// GraphQL subscriptions over WebSocket on Node: real graphql-ws clients (with `ws`) over real sockets.
import { subscriptionSuite } from '../fixtures/ws/suite.ts';
import { startNode } from '../fixtures/ws/runtimes.ts';

subscriptionSuite('Node', startNode);
