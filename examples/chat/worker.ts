// The chat example as a Cloudflare module Worker (workerd / Miniflare / wrangler).
import { withGraphQLWebSocket } from '../../edge/websocket-workerd.ts';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import { createChatSchema } from './schema.ts';

const schema = createChatSchema();
const fetch = withGraphQLWebSocket(createGraphQLHandler({ schema }), { schema });

export default {
  fetch(request: Request): Response | Promise<Response> {
    return fetch(request);
  },
};
