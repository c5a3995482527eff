// Reading the kernel's cgroup interface files: generated in memory, so a synchronous read takes
// microseconds where an async one is four thread-pool trips (open, fstat, read, close), and the
// kubelet reads every container's stats every few seconds.
import { closeSync, constants, fstatSync, openSync, readFileSync } from 'node:fs';

/**
 * The file's text, or undefined when the kernel does not offer it for this cgroup. Only a regular
 * file is read (the kernel's are): a FIFO planted where a cgroup file should be must not block the daemon.
 */
export async function readText(file: string): Promise<string | undefined> {
  let fd: number | undefined;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    if (!fstatSync(fd).isFile()) throw new Error(`${file} is not a regular file: not a cgroup's file`);
    return readFileSync(fd, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // EOPNOTSUPP: a pressure file while PSI is off (psi=0 on the kernel command line).
    if (code === 'ENOENT' || code === 'ENODEV' || code === 'EINVAL' || code === 'EOPNOTSUPP') return undefined;
    throw err;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** "key value" lines (cpu.stat, memory.stat, memory.events...). */
export function parseFlatKeyed(text: string): Map<string, bigint> {
  const out = new Map<string, bigint>();
  for (const line of text.split('\n')) {
    const [key, value] = line.trim().split(/\s+/);
    if (key && value && /^\d+$/.test(value)) out.set(key, BigInt(value));
  }
  return out;
}

/** A single-number file; undefined for "max" or when absent. */
export const num = (text: string | undefined): bigint | undefined => (text !== undefined && /^\d+$/.test(text.trim()) ? BigInt(text.trim()) : undefined);
