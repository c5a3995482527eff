// conmon's record of how a container ended: `<exitDir>/<id>` holds the exit code (its mtime is the
// finish time) and `<persistDir>/oom` appears when the cgroup OOM killer struck. conmon writes these
// whether or not skiffd is running; fs.watch on the exit dir tells us the moment one appears.
import { watch, type FSWatcher } from 'node:fs';
import { mkdir, readFile, stat, access } from 'node:fs/promises';
import { join } from 'node:path';
import { EventEmitter } from 'node:events';

export interface ExitInfo {
  exitCode: number;
  /** Nanoseconds since the epoch (decimal string). */
  finishedAt: string;
  oomKilled: boolean;
}

export async function readExit(exitDir: string, persistDir: string, id: string): Promise<ExitInfo | undefined> {
  const file = join(exitDir, id);
  let text: string;
  let mtimeNs: bigint;
  try {
    const [t, st] = await Promise.all([readFile(file, 'utf8'), stat(file, { bigint: true })]);
    text = t;
    mtimeNs = st.mtimeNs;
  } catch {
    return undefined;
  }
  const code = Number.parseInt(text.trim(), 10);
  // conmon writes the file in one go, but guard against reading it mid-write.
  if (!Number.isFinite(code)) return undefined;
  const oomKilled = await access(join(persistDir, 'oom')).then(
    () => true,
    () => false,
  );
  return { exitCode: code, finishedAt: mtimeNs.toString(), oomKilled };
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
    const exists = () => access(file).then(() => true, () => false);
    if (await exists()) return true;
    return new Promise((resolve) => {
      let done = false;
      const check = () => void exists().then((e) => e && finish(true));
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
      const timer = setTimeout(() => void exists().then(finish), Math.max(0, timeoutMs));
    });
  }
}
