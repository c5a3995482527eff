// conmon's record of how a container ended: `<exitDir>/<id>` holds the exit code (its mtime is the
// finish time) and `<persistDir>/oom` appears when the cgroup OOM killer struck. conmon writes these
// whether or not skiffd is running; fs.watch on the exit dir tells us the moment one appears.
import { existsSync, readFileSync, statSync, watch, type FSWatcher } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { EventEmitter } from 'node:events';

export interface ExitInfo {
  exitCode: number;
  /** Nanoseconds since the epoch (decimal string). */
  finishedAt: string;
  oomKilled: boolean;
}

/**
 * Every status call of a running container asks this, and the answer is almost always "no file".
 * The files are on the state dir (tmpfs) and tiny, so synchronous calls that return instead of
 * throwing cost microseconds, where a rejected fs promise costs an Error with its stack each time.
 */
export async function readExit(exitDir: string, persistDir: string, id: string): Promise<ExitInfo | undefined> {
  const file = join(exitDir, id);
  const st = statSync(file, { bigint: true, throwIfNoEntry: false });
  if (!st) return undefined;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const code = Number.parseInt(text.trim(), 10);
  // conmon writes the file in one go, but guard against reading it mid-write.
  if (!Number.isFinite(code)) return undefined;
  return { exitCode: code, finishedAt: st.mtimeNs.toString(), oomKilled: existsSync(join(persistDir, 'oom')) };
}

/**
 * Emits `exit` with the container id whenever an exit file appears. Waiters are kept per id rather
 * than as listeners, so any number of concurrent stops and starts cost one listener in all.
 */
export class ExitWatcher extends EventEmitter {
  private watcher: FSWatcher | undefined;
  private readonly waiters = new Map<string, Set<() => void>>();

  constructor(readonly exitDir: string) {
    super();
  }

  async start(): Promise<void> {
    await mkdir(this.exitDir, { recursive: true });
    this.watcher = watch(this.exitDir, (_event, name) => {
      if (!name || name.startsWith('.')) return;
      const id = name.toString();
      for (const wake of this.waiters.get(id) ?? []) wake();
      this.emit('exit', id);
    });
    this.watcher.on('error', () => {});
  }

  close(): void {
    this.watcher?.close();
    this.watcher = undefined;
  }

  /** How many waits are pending (leak checks). */
  pendingWaits(): number {
    let n = 0;
    for (const set of this.waiters.values()) n += set.size;
    return n;
  }

  /** Resolves true once `<exitDir>/<id>` exists, false after timeoutMs. */
  async waitFor(id: string, timeoutMs: number): Promise<boolean> {
    const file = join(this.exitDir, id);
    if (existsSync(file)) return true;
    return new Promise((resolve) => {
      let done = false;
      const check = () => existsSync(file) && finish(true);
      const finish = (v: boolean) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        clearInterval(poll);
        const set = this.waiters.get(id);
        set?.delete(check);
        if (set?.size === 0) this.waiters.delete(id);
        resolve(v);
      };
      let set = this.waiters.get(id);
      if (!set) this.waiters.set(id, (set = new Set()));
      set.add(check);
      // fs.watch is the fast path; a slow poll covers a missed notification.
      const poll = setInterval(check, 200);
      const timer = setTimeout(() => finish(existsSync(file)), Math.max(0, timeoutMs));
    });
  }
}
