// Deleting a layer tree (hundreds of unlinks on a busy disk) or a large blob costs a RemoveImage tens of
// ms. A rename into the trash takes it out of the store at once; the delete runs after the call has
// answered, one file system operation at a time so it never fills the thread pool the calls that
// follow need. Whatever a crash leaves in the trash is deleted at the next start.
import { mkdir, readdir, rename, rm, rmdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { sweepDir } from '../util/remove-tree.ts';

export class Trash {
  private readonly pending = new Set<Promise<void>>();

  constructor(readonly dir: string) {}

  /** Startup: deletes the leftovers of deletes a crash cut short; one that will not go is left, with a warning. */
  async empty(warn: (msg: string, fields: Record<string, unknown>) => void = () => {}): Promise<void> {
    await sweepDir(this.dir, warn, 0o700);
  }

  /** Moves `path` (file or directory) into the trash and deletes it in the background; absent is fine. */
  async discard(path: string): Promise<void> {
    const doomed = join(this.dir, randomBytes(8).toString('hex'));
    try {
      await rename(path, doomed);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        // Either the path is gone (nothing to do) or the trash is: recreate it once and retry.
        await mkdir(this.dir, { recursive: true, mode: 0o700 });
        try {
          await rename(path, doomed);
        } catch (again) {
          if ((again as NodeJS.ErrnoException).code === 'ENOENT') return;
          throw again;
        }
      } else throw err;
    }
    // A failed delete leaves the entry for the next start's empty().
    const job = removeSlowly(doomed)
      .catch(() => rm(doomed, { recursive: true, force: true }))
      .catch(() => {});
    this.pending.add(job);
    void job.finally(() => this.pending.delete(job));
  }

  /** Resolves when every background delete has finished. */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.pending]);
  }
}

/** Deletes a file or tree with one pending operation at a time (fs.rm runs a whole directory at once). */
async function removeSlowly(path: string): Promise<void> {
  let entries;
  try {
    entries = await readdir(path, { withFileTypes: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOTDIR') return unlink(path);
    if (code === 'ENOENT') return;
    throw err;
  }
  for (const entry of entries) {
    const child = `${path}/${entry.name}`;
    if (entry.isDirectory()) await removeSlowly(child);
    else await unlink(child);
  }
  await rmdir(path);
}
