// `npm start`: serves the countries API on http://localhost:$PORT/graphql (default 4000), GraphiQL on the
// same URL in a browser, and one JSON log line per request (LOG_LEVEL=silent or --quiet turns them off).
import { countriesSchema } from '../../src/countries/index.ts';
import { createCountriesHandler } from '../../src/index.ts';
import { startServer } from './app.ts';
import { createRequestLog, logLevelFrom, type LogLevel } from './logging.ts';

const rawPort = process.env.PORT ?? '4000';
const port = /^\d+$/.test(rawPort) ? Number(rawPort) : NaN;
if (!(port >= 0 && port <= 65535)) {
  console.error(`PORT must be a number from 0 to 65535 (got "${rawPort}")`);
  process.exit(2);
}

let level: LogLevel;
try {
  level = logLevelFrom(process.env.LOG_LEVEL, process.argv.slice(2));
} catch (error) {
  console.error((error as Error).message);
  process.exit(2);
}
const graphiql = !/^(0|false|off|no)$/i.test(process.env.GRAPHIQL ?? '');
const log = createRequestLog({ level });

try {
  const handler = createCountriesHandler({
    onResponse: log?.onResponse,
    // NODE_ENV=development shows resolver errors as they are instead of "Unexpected error."
    development: process.env.NODE_ENV === 'development',
  });
  const server = await startServer({
    handler,
    port,
    hostname: process.env.HOST || undefined,
    graphiql,
    log,
    // The same URL answers WebSocket upgrades with GraphQL over WebSocket (graphql-transport-ws).
    subscriptions: { schema: countriesSchema },
  });
  console.log(`GraphQL endpoint ready at ${server.url}${graphiql ? ' (open it in a browser for GraphiQL)' : ''}`);
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
