// GraphQL subscriptions over SSE and multipart on the Node server (Hono on @hono/node-server).
import { httpStreamSuite } from '../fixtures/streams/suite.ts';
import { startNode } from '../fixtures/ws/runtimes.ts';

httpStreamSuite('Node', startNode);
