// GraphQL subscriptions over SSE and multipart on Bun, through a bundle of the test chat app.
import { httpStreamSuite } from '../fixtures/streams/suite.ts';
import { startBun } from '../fixtures/ws/runtimes.ts';

httpStreamSuite('Bun', startBun);
