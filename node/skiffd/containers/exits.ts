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

/** Emits `exit` with the container id whenever an exit file appears. */
export class ExitWatcher extends EventEmitter {
  private watcher: FSWatcher | undefined;

  constructor(readonly exitDir: string) {
    super();
  }

  async start(): Promise<void> {
    await mkdir(this.exitDir, { recursive: true });
    this.watcher = watch(this.exitDir, (_event, name) => {
      if (name && !name.startsWith('.')) this.emit('exit', name.toString());
    });
    this.watcher.on('error', () => {});
  }

  close(): void {
    this.watcher?.close();
    this.watcher = undefined;
  }

  /** Resolves true once `<exitDir>/<id>` exists, false after timeoutMs. */
  async waitFor(id: string, timeoutMs: number): Promise<boolean> {
    const file = join(this.exitDir, id);
    const exists = () => access(file).then(() => true, () => false);
    if (await exists()) return true;
    return new Promise((resolve) => {
      let done = false;
      const finish = (v: boolean) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        clearInterval(poll);
        this.off('exit', onExit);
        resolve(v);
      };
      const onExit = (name: string) => {
        if (name === id) void exists().then((e) => e && finish(true));
      };
      this.on('exit', onExit);
      // fs.watch is the fast path; a slow poll covers a missed notification.
      const poll = setInterval(() => void exists().then((e) => e && finish(true)), 200);
      const timer = setTimeout(() => void exists().then(finish), Math.max(0, timeoutMs));
    });
  }
}
