// GraphQL subscriptions over SSE and multipart on Deno, through a bundle of the test chat app.
import { httpStreamSuite } from '../fixtures/streams/suite.ts';
import { startDeno } from '../fixtures/ws/runtimes.ts';

httpStreamSuite('Deno', startDeno);
