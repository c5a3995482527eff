// Tests that need root, runc, a registry or a browser skip loudly when those are missing on a
// developer's machine, but under CI=true a missing prerequisite is a failure, never a silent skip.
import type { TestContext } from 'node:test';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

export const inCI = process.env.CI === 'true' || process.env.CI === '1';

/** The first executable named `name` on PATH (or the absolute path itself), or undefined. */
export function which(name: string): string | undefined {
  const candidates = name.includes('/') ? [name] : (process.env.PATH ?? '').split(delimiter).map((d) => join(d, name));
  for (const file of candidates) {
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      /* keep looking */
    }
  }
  return undefined;
}

export const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

/**
 * Returns the missing prerequisites (empty when all are present). Under CI the test fails;
 * elsewhere it is skipped with the reason printed, so a missing tool is never invisible.
 */
export function needs(t: TestContext, requirements: { root?: boolean; commands?: string[] }): boolean {
  const missing: string[] = [];
  if (requirements.root && !isRoot) missing.push('root');
  for (const cmd of requirements.commands ?? []) if (!which(cmd)) missing.push(cmd);
  if (missing.length === 0) return true;
  unavailable(t, `missing prerequisite(s): ${missing.join(', ')} (install them: see .ci/apt-packages.txt)`);
  return false;
}

/** A test that cannot run here: a loud skip on a developer's machine, a failure under CI. */
export function unavailable(t: TestContext, reason: string): void {
  if (inCI) throw new Error(`${reason}; under CI=true this is a failure, not a skip`);
  console.warn(`\n*** SKIPPING "${t.name}": ${reason} ***\n`);
  t.skip(reason);
}
