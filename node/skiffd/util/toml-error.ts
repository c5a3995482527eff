// smol-toml knows where a parse stopped; an operator needs that to find the mistake in a file.

/** "invalid TOML at line L, column C: what" from smol-toml's error. */
export function describeTomlError(err: unknown): string {
  const { line, column } = err as { line?: number; column?: number };
  const at = line ? ` at line ${line}${column ? `, column ${column}` : ''}` : '';
  return `invalid TOML${at}: ${(err as Error).message.split('\n')[0].replace(/^Invalid TOML document: /, '')}`;
}
