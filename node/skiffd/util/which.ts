// Resolves a command the way exec does: an absolute path is checked as is, a bare name is searched on PATH.
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

export function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The executable `command` names, or undefined. */
export function which(command: string, path = process.env.PATH ?? ''): string | undefined {
  if (isAbsolute(command)) return isExecutableFile(command) ? command : undefined;
  for (const dir of path.split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, command);
    if (isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}
