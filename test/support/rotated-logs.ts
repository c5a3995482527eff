// A container's CRI log as the kubelet's log rotation leaves it: the current N.log plus the rotated
// files beside it (N.log.YYYYMMDD-hhmmss, gzipped once they are not the newest rotation), read back in
// the order they were written.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { criLogText } from './kubelet.ts';

export interface RotatedLog {
  /** The rotated files, oldest first (without the live file). */
  rotated: string[];
  /** Every line's text, in order, across the rotated files and the live one. */
  lines: string[];
}

/** The rotated files of `N.log` in `dir`, oldest first; a file being compressed counts once. */
export function rotatedFiles(dir: string, restartCount = 0): string[] {
  const prefix = `${restartCount}.log.`;
  const names = readdirSync(dir).filter((n) => n.startsWith(prefix) && !n.endsWith('.tmp'));
  const stems = new Set(names.map((n) => n.replace(/\.gz$/, '')));
  // While the kubelet compresses, X and X.gz both exist for a moment: the .gz is complete once renamed.
  return [...stems].sort().map((stem) => (names.includes(`${stem}.gz`) ? `${stem}.gz` : stem));
}

function readOnce(dir: string, restartCount: number): RotatedLog {
  const rotated = rotatedFiles(dir, restartCount);
  let content = '';
  for (const name of rotated) {
    const data = readFileSync(join(dir, name));
    content += (name.endsWith('.gz') ? gunzipSync(data) : data).toString('utf8');
  }
  content += readFileSync(join(dir, `${restartCount}.log`), 'utf8');
  return { rotated, lines: criLogText(content) };
}

/**
 * Reads the whole log. The kubelet may rotate or compress between two reads, and between its rename of
 * N.log and the runtime's reopen there is no N.log at all, so this reads until two reads 50 ms apart
 * agree, retrying a read that raced with a rename, for at most `timeoutMs`.
 */
export async function readRotatedLog(dir: string, restartCount = 0, timeoutMs = 15_000): Promise<RotatedLog> {
  const deadline = Date.now() + timeoutMs;
  let last: string | undefined;
  let error: unknown;
  let reads = 0;
  for (;;) {
    reads++;
    try {
      const log = readOnce(dir, restartCount);
      const key = JSON.stringify(log);
      if (key === last) return log;
      last = key;
    } catch (err) {
      error = err;
      last = undefined;
    }
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the log in ${dir} kept changing over ${reads} reads in ${timeoutMs} ms${error ? ` (last error: ${(error as Error).message})` : ''}`);
}
