// GraphQL subscriptions over SSE and multipart on Vercel's edge-runtime, where an edge function has no
// WebSocket server: HTTP streams are its only way to subscribe.
import { httpStreamSuite } from '../fixtures/streams/suite.ts';
import { startEdgeRuntime } from '../fixtures/ws/runtimes.ts';

httpStreamSuite('Vercel edge-runtime', startEdgeRuntime);
