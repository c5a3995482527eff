// The Node server's settings, all from the environment so an operator configures it without code.
// Every value is checked up front: a bad one is a ConfigError naming its variable (serve.ts exits 2).
import type { LimitOptions } from '../../src/handler/limits.ts';
import { freeformModes } from '../../src/handler/trusted-documents.ts';
import { logLevelFrom, type LogLevel } from './logging.ts';

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable} ${message}`);
    this.name = 'ConfigError';
  }
}

export interface ServerConfig {
  port: number;
  /** undefined: all interfaces. */
  host: string | undefined;
  graphiql: boolean;
  logLevel: LogLevel;
  /** Origins allowed to read responses from a browser; empty: no CORS headers at all. */
  corsOrigins: string[];
  introspection: boolean;
  /** Seconds for `Cache-Control: public, max-age=N`; undefined: the handler's default; false: none. */
  cacheMaxAge: number | false | undefined;
  maxBodyBytes: number | undefined;
  limits: LimitOptions;
  /** Prometheus text on /metrics. */
  metrics: boolean;
  /** Milliseconds open requests and WebSockets get to finish after SIGTERM before they are cut. */
  shutdownTimeoutMs: number;
  development: boolean;
  /** Path of a trusted-document manifest (Apollo's or Relay's JSON), read at start (trusted-documents.ts). */
  trustedDocuments: string | undefined;
  /** What freeform query text may run beside the trusted documents; undefined: the handler's default. */
  trustedDocumentsFreeform: (typeof freeformModes)[number] | undefined;
}

/** Each variable, its meaning and default: printed by `--help` and kept in step with the docs. */
export const variables: readonly [name: string, meaning: string][] = [
  ['PORT', 'port to listen on, 0 for any free one (default 4000)'],
  ['HOST', 'interface to listen on (default: all)'],
  ['GRAPHIQL', 'GraphiQL in browsers on /graphql: on|off (default on)'],
  ['LOG_LEVEL', 'silent|error|warn|info|debug; info writes one JSON line per request (default info)'],
  ['CORS_ORIGINS', 'comma-separated origins allowed to call from a browser, e.g. https://app.example (default none)'],
  ['INTROSPECTION', 'answer __schema and __type: on|off (default on)'],
  ['CACHE_MAX_AGE', 'seconds in Cache-Control: public, max-age=N on GET results, or off (default 60)'],
  ['MAX_BODY_BYTES', 'largest POST body (default 1048576)'],
  ['MAX_QUERY_LENGTH', 'longest query in characters (default 10000)'],
  ['MAX_TOKENS', 'most tokens in a query (default 2000)'],
  ['MAX_DEPTH', 'deepest field nesting (default 10)'],
  ['MAX_ALIASES', 'most aliases in a query (default 20)'],
  ['MAX_LIST_SIZE', 'most items in a list argument (default 1000)'],
  ['METRICS', 'Prometheus metrics on /metrics: on|off (default off)'],
  ['SHUTDOWN_TIMEOUT', 'seconds open requests and WebSockets get after SIGTERM (default 10)'],
  ['TRUSTED_DOCUMENTS', 'path of a persisted query manifest (Apollo) or persisted_queries.json (Relay): operations run by id (default none)'],
  ['TRUSTED_DOCUMENTS_FREEFORM', 'with TRUSTED_DOCUMENTS, what query text may run: refused|listed|allowed (default refused; allowed in development)'],
  ['NODE_ENV', 'development shows resolver errors unmasked (and runs any query beside trusted documents)'],
];

type Env = Readonly<Record<string, string | undefined>>;

/** The settings from `env` (and `--quiet` in argv); throws a ConfigError for the first bad value. */
export function configFromEnv(env: Env, argv: readonly string[] = []): ServerConfig {
  const limits: LimitOptions = {};
  const limitVariables = [
    ['MAX_QUERY_LENGTH', 'maxQueryLength'],
    ['MAX_TOKENS', 'maxTokens'],
    ['MAX_DEPTH', 'maxDepth'],
    ['MAX_ALIASES', 'maxAliases'],
    ['MAX_LIST_SIZE', 'maxListSize'],
  ] as const;
  for (const [variable, option] of limitVariables) {
    const value = integer(env, variable, 1);
    if (value !== undefined) limits[option] = value;
  }
  let logLevel: LogLevel;
  try {
    logLevel = logLevelFrom(env.LOG_LEVEL, argv);
  } catch {
    throw new ConfigError('LOG_LEVEL', `must be one of silent, error, warn, info, debug (got "${env.LOG_LEVEL}")`);
  }
  const cacheMaxAge = isOff(env.CACHE_MAX_AGE) ? false : integer(env, 'CACHE_MAX_AGE', 0);
  const shutdownSeconds = number(env, 'SHUTDOWN_TIMEOUT') ?? 10;
  return {
    port: integer(env, 'PORT', 0, 65535) ?? 4000,
    host: text(env.HOST),
    graphiql: flag(env, 'GRAPHIQL', true),
    logLevel,
    corsOrigins: origins(env, 'CORS_ORIGINS'),
    introspection: flag(env, 'INTROSPECTION', true),
    cacheMaxAge,
    maxBodyBytes: integer(env, 'MAX_BODY_BYTES', 1),
    limits,
    metrics: flag(env, 'METRICS', false),
    shutdownTimeoutMs: Math.round(shutdownSeconds * 1000),
    development: env.NODE_ENV === 'development',
    trustedDocuments: text(env.TRUSTED_DOCUMENTS),
    trustedDocumentsFreeform: freeform(env),
  };
}

function freeform(env: Env): (typeof freeformModes)[number] | undefined {
  const value = text(env.TRUSTED_DOCUMENTS_FREEFORM)?.toLowerCase();
  if (value === undefined) return undefined;
  const mode = freeformModes.find((known) => known === value);
  if (mode === undefined) {
    throw new ConfigError('TRUSTED_DOCUMENTS_FREEFORM', `must be one of ${freeformModes.join(', ')} (got "${env.TRUSTED_DOCUMENTS_FREEFORM}")`);
  }
  if (text(env.TRUSTED_DOCUMENTS) === undefined) throw new ConfigError('TRUSTED_DOCUMENTS_FREEFORM', 'needs TRUSTED_DOCUMENTS (the manifest) as well');
  return mode;
}

function text(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed ? trimmed : undefined;
}

const on = /^(1|true|on|yes)$/i;
const off = /^(0|false|off|no)$/i;

function isOff(value: string | undefined): boolean {
  return value !== undefined && off.test(value.trim());
}

function flag(env: Env, variable: string, fallback: boolean): boolean {
  const value = text(env[variable]);
  if (value === undefined) return fallback;
  if (on.test(value)) return true;
  if (off.test(value)) return false;
  throw new ConfigError(variable, `must be on or off (also 1/0, true/false, yes/no; got "${env[variable]}")`);
}

function integer(env: Env, variable: string, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const value = text(env[variable]);
  if (value === undefined) return undefined;
  const parsed = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!(parsed >= min && parsed <= max)) {
    const range = max === Number.MAX_SAFE_INTEGER ? `an integer of at least ${min}` : `an integer from ${min} to ${max}`;
    throw new ConfigError(variable, `must be ${range} (got "${env[variable]}")`);
  }
  return parsed;
}

function number(env: Env, variable: string): number | undefined {
  const value = text(env[variable]);
  if (value === undefined) return undefined;
  const parsed = /^\d+(\.\d+)?$/.test(value) ? Number(value) : NaN;
  if (!(parsed >= 0 && parsed <= 3600)) throw new ConfigError(variable, `must be a number of seconds from 0 to 3600 (got "${env[variable]}")`);
  return parsed;
}

function origins(env: Env, variable: string): string[] {
  const value = text(env[variable]);
  if (value === undefined) return [];
  return value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) => {
      let origin: string | undefined;
      try {
        origin = new URL(entry).origin;
      } catch {
        origin = undefined;
      }
      if (origin !== entry || origin === 'null') {
        throw new ConfigError(variable, `must list origins like https://app.example, without path or trailing slash (got "${entry}")`);
      }
      return entry;
    });
}
