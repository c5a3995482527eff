// Structured logs, one line per event on stderr, in logfmt (`time=... level=info msg="..." key=value`)
// like containerd and CRI-O, so they stay greppable and machine-readable. Lines below the configured
// level are dropped before they are formatted.
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export type LogFields = Record<string, unknown>;

export interface Logger {
  readonly level: LogLevel;
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger that adds `fields` to every line. */
  child(fields: LogFields): Logger;
  enabled(level: LogLevel): boolean;
}

const rank: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

function formatValue(value: unknown): string {
  let text: string;
  if (value instanceof Error) text = value.message;
  else if (typeof value === 'string') text = value;
  else if (typeof value === 'bigint' || typeof value === 'number' || typeof value === 'boolean') text = String(value);
  else if (value === undefined || value === null) text = '';
  else text = JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
  return text === '' || /[\s"=\\]/.test(text) || /[\x00-\x1f]/.test(text) ? JSON.stringify(text) : text;
}

export function formatLine(level: LogLevel, msg: string, fields: LogFields, now = new Date()): string {
  let line = `time=${now.toISOString()} level=${level} msg=${formatValue(msg)}`;
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    line += ` ${key}=${formatValue(value)}`;
  }
  return line + '\n';
}

export function createLogger(level: LogLevel, write: (line: string) => void = (line) => process.stderr.write(line), base: LogFields = {}): Logger {
  const emit = (at: LogLevel, msg: string, fields?: LogFields) => {
    if (rank[at] < rank[level]) return;
    write(formatLine(at, msg, { ...base, ...fields }));
  };
  return {
    level,
    debug: (msg, fields) => emit('debug', msg, fields),
    info: (msg, fields) => emit('info', msg, fields),
    warn: (msg, fields) => emit('warn', msg, fields),
    error: (msg, fields) => emit('error', msg, fields),
    child: (fields) => createLogger(level, write, { ...base, ...fields }),
    enabled: (at) => rank[at] >= rank[level],
  };
}
