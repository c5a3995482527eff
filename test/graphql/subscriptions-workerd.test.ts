// GraphQL subscriptions over WebSocket on workerd: real graphql-ws clients (with `ws`) over real sockets.
import { subscriptionSuite } from '../fixtures/ws/suite.ts';
import { startWorkerd } from '../fixtures/ws/runtimes.ts';

subscriptionSuite('workerd', startWorkerd);
