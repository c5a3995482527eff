// The host's mount table as the kernel reports it (/proc/self/mountinfo). Mount points there are real
// paths, with space, tab, newline and backslash escaped as octal; compare them only with real paths.
import { readFile } from 'node:fs/promises';
import { sep } from 'node:path';
import { unmountOrDetach } from './mount-calls.ts';

function unescapeMountField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(Number.parseInt(oct, 8)));
}

/** Every mount point in this mount namespace, in mount order (a path mounted twice appears twice). */
export async function mountPoints(): Promise<string[]> {
  const out: string[] = [];
  for (const line of (await readFile('/proc/self/mountinfo', 'utf8')).split('\n')) {
    const f = line.split(' ');
    if (f.length > 4) out.push(unescapeMountField(f[4]));
  }
  return out;
}

export async function isMountPoint(path: string): Promise<boolean> {
  return (await mountPoints()).includes(path);
}

/** Mount points at or below `dir` (a real path), deepest first; one mounted twice is listed twice. */
export async function mountPointsUnder(dir: string): Promise<string[]> {
  const prefix = dir.endsWith(sep) ? dir : dir + sep;
  return (await mountPoints()).filter((m) => m === dir || m.startsWith(prefix)).sort((a, b) => b.length - a.length);
}

/**
 * Unmounts everything at or below `dir` (a real path), deepest first; a busy mount is detached. Throws
 * if anything is still mounted there afterwards, so a caller never goes on to delete through a mount.
 */
export async function unmountAllUnder(dir: string): Promise<void> {
  // Stacked mounts come off one per pass; a bound number of passes keeps a mount that will not go from looping.
  for (let pass = 0; pass < 8; pass++) {
    const mounts = await mountPointsUnder(dir);
    if (mounts.length === 0) return;
    for (const m of new Set(mounts)) await unmountOrDetach(m);
  }
  const left = await mountPointsUnder(dir);
  if (left.length > 0) throw new Error(`cannot unmount ${left.join(', ')}: still mounted under ${dir}`);
}
