// The Node server for the countries API: `npm start` runs it from the sources, `node dist/server.mjs`
// from the build. Serves http://localhost:$PORT/graphql (default 4000), GraphiQL on the same URL in a
// browser, GraphQL over WebSocket for subscriptions and, with METRICS=on, Prometheus text on /metrics. Settings come from the environment
// (config.ts, `--help` lists them); SIGTERM or SIGINT drains open requests and sockets, then exits.
import { countriesSchema } from '../../src/countries/index.ts';
import { createCountriesHandler } from '../../src/index.ts';
import { startServer } from './app.ts';
import { ConfigError, configFromEnv, variables, type ServerConfig } from './config.ts';
import { createRequestLog } from './logging.ts';
import { createMetrics } from './metrics.ts';
import { readTrustedDocuments } from './trusted-documents.ts';
import type { TrustedDocumentsOptions } from '../../src/handler/trusted-documents.ts';

const argv = process.argv.slice(2);
if (argv.includes('--help') || argv.includes('-h')) {
  const width = Math.max(...variables.map(([name]) => name.length));
  console.log(`Serves the countries GraphQL API.\n\nusage: [VARIABLE=value ...] node dist/server.mjs [--quiet]\n\nEnvironment:`);
  for (const [name, meaning] of variables) console.log(`  ${name.padEnd(width)}  ${meaning}`);
  process.exit(0);
}

let config: ServerConfig;
let trustedDocuments: TrustedDocumentsOptions | undefined;
try {
  config = configFromEnv(process.env, argv);
  if (config.trustedDocuments !== undefined) {
    const { manifest, count } = readTrustedDocuments(config.trustedDocuments);
    trustedDocuments = { manifest, freeform: config.trustedDocumentsFreeform };
    if (config.logLevel !== 'silent') console.log(`Trusted documents: ${count} from ${config.trustedDocuments}`);
  }
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  console.error(`Invalid setting: ${error.message}`);
  process.exit(2);
}

const log = createRequestLog({ level: config.logLevel });
const metrics = config.metrics ? createMetrics() : null;
const observers = [log?.onResponse, metrics?.onResponse].filter((observer) => observer !== undefined);

// Readiness turns false as soon as a drain begins, so a load balancer stops sending new requests.
let stopping = false;
try {
  const handler = createCountriesHandler({
    health: { ready: () => !stopping },
    onResponse:
      observers.length <= 1
        ? observers[0]
        : (event) => {
            for (const observe of observers) observe(event);
          },
    // NODE_ENV=development shows resolver errors as they are instead of "Unexpected error."
    development: config.development,
    introspection: config.introspection,
    cors: config.corsOrigins.length > 0 ? { origin: config.corsOrigins } : undefined,
    cacheControl: config.cacheMaxAge === undefined ? undefined : config.cacheMaxAge === false ? false : { maxAge: config.cacheMaxAge },
    maxBodyBytes: config.maxBodyBytes,
    limits: config.limits,
    trustedDocuments,
  });
  const server = await startServer({
    handler,
    port: config.port,
    hostname: config.host,
    graphiql: config.graphiql,
    log,
    metrics,
    // The same URL answers WebSocket upgrades with GraphQL over WebSocket (graphql-transport-ws).
    subscriptions: { schema: countriesSchema, introspection: config.introspection },
  });
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    if (config.logLevel !== 'silent') console.log(`${signal}: finishing open requests and closing WebSockets`);
    server.shutdown(config.shutdownTimeoutMs).then(
      (drained) => {
        if (!drained) console.error(`Shutdown took longer than SHUTDOWN_TIMEOUT (${config.shutdownTimeoutMs / 1000} s): open connections were cut`);
        process.exit(drained ? 0 : 1);
      },
      (error: unknown) => {
        console.error('Shutdown failed:', error);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  // Announced only once the signal handlers are in: whoever waits for this line may stop us at once.
  console.log(`GraphQL endpoint ready at ${server.url}${config.graphiql ? ' (open it in a browser for GraphiQL)' : ''}`);
} catch (error) {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') console.error(`Port ${config.port} is already in use: set PORT to a free port (e.g. PORT=4001 npm start)`);
  else console.error('Could not start the GraphQL server:', error);
  process.exit(1);
}
