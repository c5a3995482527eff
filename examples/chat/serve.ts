// `npx tsx examples/chat/serve.ts`: the chat example on http://localhost:$PORT/graphql (default 4000),
// subscriptions on the same URL over WebSocket, server-sent events or multipart. With REDIS_URL set (redis://host:port), several of
// these processes share events through Redis pub/sub.
import { Redis } from 'ioredis';
import { createRedisPubSub } from '../../src/subscriptions/pubsub-redis.ts';
import type { PubSub } from '../../src/subscriptions/pubsub.ts';
import type { ChatTopics } from './schema.ts';
import { startChatServer } from './server.ts';

const rawPort = process.env.PORT ?? '4000';
const port = /^\d+$/.test(rawPort) ? Number(rawPort) : NaN;
if (!(port >= 0 && port <= 65535)) {
  console.error(`PORT must be a number from 0 to 65535 (got "${rawPort}")`);
  process.exit(2);
}

let pubsub: PubSub<ChatTopics> | undefined;
const redisUrl = process.env.REDIS_URL;
if (redisUrl) {
  // Fail fast on a wrong URL instead of retrying forever in the background.
  const connect = () => {
    const client = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 3 });
    // ioredis reconnects on its own; report failures instead of letting them surface as unhandled.
    client.on('error', (error: Error) => console.error(`Redis (${redisUrl}): ${error.message}`));
    return client;
  };
  const publisher = connect();
  const subscriber = connect();
  try {
    await Promise.all([publisher.connect(), subscriber.connect()]);
  } catch (error) {
    console.error(`Could not connect to Redis at ${redisUrl}: ${(error as Error).message}`);
    process.exit(1);
  }
  pubsub = createRedisPubSub<ChatTopics>({ publisher, subscriber });
}

try {
  const server = await startChatServer({ port, hostname: process.env.HOST || undefined, pubsub, graphiql: true });
  console.log(
    `Chat example ready at ${server.url} (subscriptions: ${server.wsUrl}, or SSE and multipart on the same URL${redisUrl ? '; pub/sub: Redis' : ''}; GraphiQL in a browser)`,
  );
  const stop = () => {
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
} catch (error) {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') console.error(`Port ${port} is already in use: set PORT to a free port`);
  else console.error('Could not start the chat example:', error);
  process.exit(1);
}
