// GraphQL subscriptions over SSE and multipart on workerd with the subscribers in a Durable Object and
// mutations in the Worker: each stream crosses from the Worker to the object, as in production.
import { httpStreamSuite } from '../fixtures/streams/suite.ts';
import { startWorkerdDurableObject } from '../fixtures/ws/runtimes.ts';

httpStreamSuite('workerd with a Durable Object', startWorkerdDurableObject);
