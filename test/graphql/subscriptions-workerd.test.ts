// GraphQL subscriptions over WebSocket on workerd: real graphql-ws clients (with `ws`) over real sockets.
// In a stateless Worker each socket belongs to its upgrade request, so executions are not shared
// there (the Durable Object test covers sharing on workerd).
import { subscriptionSuite } from '../fixtures/ws/suite.ts';
import { startWorkerd } from '../fixtures/ws/runtimes.ts';

subscriptionSuite('workerd', startWorkerd, { shares: false });
