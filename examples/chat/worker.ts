// The chat example as a Cloudflare module Worker (workerd / Miniflare / wrangler).
import { withGraphQLWebSocket } from '../../edge/websocket-workerd.ts';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import { createChatSchema } from './schema.ts';

const schema = createChatSchema();
// Over plain HTTP a stream belongs to its request, and workerd lets no other request's event (a
// mutation's) reach it: chat subscriptions over SSE or multipart need the Durable Object
// (edge/websocket-durable-object.ts). Here they go over WebSocket.
const fetch = withGraphQLWebSocket(createGraphQLHandler({ schema, subscriptions: false, incrementalDelivery: true }), { schema });

export default {
  fetch(request: Request): Response | Promise<Response> {
    return fetch(request);
  },
};
