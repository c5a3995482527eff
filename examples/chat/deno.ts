// The chat example on Deno: `deno serve --allow-net examples/chat/deno.ts` (from a bundle, see the
// README). One isolate: subscribers see mutations served by the same process.
import { withGraphQLWebSocket } from '../../edge/websocket-deno.ts';
import { createGraphQLHandler } from '../../src/handler/create-handler.ts';
import { createChatSchema } from './schema.ts';

const schema = createChatSchema();

export default { fetch: withGraphQLWebSocket(createGraphQLHandler({ schema }), { schema }) };
