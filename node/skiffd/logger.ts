// Structured logs, one line per event on stderr: logfmt (`time=... level=info msg="..." key=value`) like
// containerd and CRI-O, or one JSON object per line for log shippers. Lines below the configured level
// are dropped before they are formatted.
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['logfmt', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

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

/** The same event as one JSON object: time, level and msg first, then the fields (errors as their message). */
export function formatJsonLine(level: LogLevel, msg: string, fields: LogFields, now = new Date()): string {
  const record: Record<string, unknown> = { time: now.toISOString(), level, msg };
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined || key === 'time' || key === 'level' || key === 'msg') continue;
    record[key] = value instanceof Error ? value.message : value;
  }
  return JSON.stringify(record, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)) + '\n';
}

export function createLogger(
  level: LogLevel,
  write: (line: string) => void = (line) => process.stderr.write(line),
  base: LogFields = {},
  format: LogFormat = 'logfmt',
): Logger {
  const line = format === 'json' ? formatJsonLine : formatLine;
  const emit = (at: LogLevel, msg: string, fields?: LogFields) => {
    if (rank[at] < rank[level]) return;
    write(line(at, msg, { ...base, ...fields }));
  };
  return {
    level,
    debug: (msg, fields) => emit('debug', msg, fields),
    info: (msg, fields) => emit('info', msg, fields),
    warn: (msg, fields) => emit('warn', msg, fields),
    error: (msg, fields) => emit('error', msg, fields),
    child: (fields) => createLogger(level, write, { ...base, ...fields }, format),
    enabled: (at) => rank[at] >= rank[level],
  };
}
