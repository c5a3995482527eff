// Structured request logging for the Node dev server: one JSON line per request.
import type { MiddlewareHandler } from 'hono';
import type { ResponseEvent } from '../../src/handler/options.ts';

export const logLevels = ['silent', 'error', 'warn', 'info', 'debug'] as const;
export type LogLevel = (typeof logLevels)[number];

/** The level from `LOG_LEVEL` and a `--quiet` flag (which wins); `info` when neither is given. */
export function logLevelFrom(env: string | undefined, argv: readonly string[]): LogLevel {
  if (argv.includes('--quiet') || argv.includes('-q')) return 'silent';
  if (env === undefined || env === '') return 'info';
  const level = env.trim().toLowerCase();
  if (!(logLevels as readonly string[]).includes(level)) {
    throw new Error(`LOG_LEVEL must be one of ${logLevels.join(', ')} (got "${env}")`);
  }
  return level as LogLevel;
}

export interface RequestLogEntry {
  time: string;
  level: 'info';
  msg: 'request';
  method: string;
  path: string;
  status: number;
  /** Milliseconds from the request reaching the app to its response being ready, 0.01 ms resolution. */
  durationMs: number;
  /** The GraphQL operation's name, when the request was a GraphQL operation that has one. */
  operationName?: string;
}

export interface RequestLog {
  /** Hono middleware timing every request and writing its line. */
  middleware: MiddlewareHandler;
  /** Give this to the GraphQL handler's `onResponse` option so lines carry the operation name. */
  onResponse: (event: ResponseEvent) => void;
}

export interface RequestLogOptions {
  level?: LogLevel;
  /** Receives each line, without the newline. Default: stdout. */
  write?: (line: string) => void;
}

/** A request log, or null when the level leaves request lines out (no middleware at all then). */
export function createRequestLog(options: RequestLogOptions = {}): RequestLog | null {
  const level = options.level ?? 'info';
  if (logLevels.indexOf(level) < logLevels.indexOf('info')) return null;
  const write = options.write ?? ((line: string) => process.stdout.write(`${line}\n`));
  // The handler reports the operation name against the very Request object the middleware saw.
  const operations = new WeakMap<Request, string>();

  const middleware: MiddlewareHandler = async (c, next) => {
    const start = performance.now();
    try {
      await next();
    } finally {
      const request = c.req.raw;
      const entry: RequestLogEntry = {
        time: new Date().toISOString(),
        level: 'info',
        msg: 'request',
        method: request.method,
        path: c.req.path,
        status: c.res?.status ?? 500,
        durationMs: Math.round((performance.now() - start) * 100) / 100,
      };
      const operationName = operations.get(request);
      if (operationName !== undefined) entry.operationName = operationName;
      try {
        write(JSON.stringify(entry));
      } catch {
        // a log that cannot be written must not fail the request
      }
    }
  };

  return {
    middleware,
    onResponse: (event) => {
      if (event.operationName) operations.set(event.request, event.operationName);
    },
  };
}
