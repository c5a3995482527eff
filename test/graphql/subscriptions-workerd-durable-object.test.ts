// GraphQL subscriptions on workerd with the sockets in a Durable Object and mutations in the Worker:
// every event crosses from the Worker to the object, the way it must across isolates in production.
// The object accepts its sockets with the Hibernation API, so it sends no pings: clients ping.
// subscriptions-workerd-hibernation.test.ts evicts it between events.
import { subscriptionSuite } from '../fixtures/ws/suite.ts';
import { startWorkerdDurableObject } from '../fixtures/ws/runtimes.ts';

subscriptionSuite('workerd with a Durable Object', startWorkerdDurableObject, { hibernating: true });
