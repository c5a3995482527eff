// The chat example on Deno: `deno serve --allow-net --allow-env=NODE_ENV examples/chat/deno.ts`.
// One isolate: subscribers see the mutations this process serves (see the README for shared engines).
import { withGraphQLWebSocket } from '../../edge/websocket-deno.ts';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import { createChatSchema } from './schema.ts';

const schema = createChatSchema();

export default { fetch: withGraphQLWebSocket(createGraphQLHandler({ schema, incrementalDelivery: true }), { schema }) };
