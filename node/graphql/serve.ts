// `npm start`: serves the countries API on http://localhost:$PORT/graphql (default 4000).
import countries from '../../src/index.ts';
import { startServer } from './app.ts';

const rawPort = process.env.PORT ?? '4000';
const port = /^\d+$/.test(rawPort) ? Number(rawPort) : NaN;
if (!(port >= 0 && port <= 65535)) {
  console.error(`PORT must be a number from 0 to 65535 (got "${rawPort}")`);
  process.exit(2);
}

try {
  const server = await startServer({ handler: countries.fetch, port, hostname: process.env.HOST || undefined });
  console.log(`GraphQL endpoint ready at ${server.url}`);
  const stop = () => {
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
    // Open connections get a moment to finish, no more.
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
} catch (error) {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') console.error(`Port ${port} is already in use: set PORT to a free port (e.g. PORT=4001 npm start)`);
  else console.error('Could not start the GraphQL server:', error);
  process.exit(1);
}
