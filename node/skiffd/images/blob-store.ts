// Content-addressed blobs. A blob is streamed to a temp file, its size and sha256 checked, fsynced,
// and only then renamed to its digest: a partial or corrupt download never becomes a stored blob.
import { createHash } from 'node:crypto';
import { open, rename, rm, stat, readFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { ImageError } from './errors.ts';
import { fsyncDir } from '../util/atomic-file.ts';
import type { StoreLayout } from './store-layout.ts';
import type { Trash } from './trash.ts';

export type BlobProgress = (bytes: number) => void;

export class BlobStore {
  private readonly inflight = new Map<string, Promise<void>>();

  constructor(
    private readonly layout: StoreLayout,
    private readonly trash: Trash,
  ) {}

  async has(digest: string): Promise<boolean> {
    try {
      await stat(this.layout.blob(digest));
      return true;
    } catch {
      return false;
    }
  }

  path(digest: string): string {
    return this.layout.blob(digest);
  }

  read(digest: string): Promise<Buffer> {
    return readFile(this.layout.blob(digest));
  }

  async size(digest: string): Promise<number> {
    return (await stat(this.layout.blob(digest))).size;
  }

  /**
   * Stores the blob unless present. Concurrent callers for one digest share a single download:
   * `open` is only called by the first.
   */
  ensure(digest: string, size: number, open: () => Promise<Readable>, progress?: BlobProgress): Promise<void> {
    const running = this.inflight.get(digest);
    if (running) return running;
    const job = (async () => {
      if (await this.has(digest)) return;
      await this.ingest(digest, size, await open(), progress);
    })().finally(() => this.inflight.delete(digest));
    this.inflight.set(digest, job);
    return job;
  }

  /** Writes bytes already in memory (a manifest), checking them against `digest`. */
  async putBytes(digest: string, data: Buffer): Promise<void> {
    const actual = sha256(data);
    if (actual !== digest) throw new ImageError('data-loss', `content ${digest} has digest ${actual}: refusing to store it`);
    if (await this.has(digest)) return;
    await this.ingest(digest, data.length, Readable.from([data]));
  }

  private async ingest(digest: string, size: number, source: Readable, progress?: BlobProgress): Promise<void> {
    await mkdir(this.layout.tmpDir, { recursive: true });
    await mkdir(this.layout.blobsDir, { recursive: true });
    const temp = join(this.layout.tmpDir, `blob-${digest.slice(7, 19)}-${randomBytes(6).toString('hex')}`);
    const handle = await open(temp, 'wx', 0o644);
    const hash = createHash('sha256');
    let written = 0;
    try {
      for await (const chunk of source) {
        const buf = chunk as Buffer;
        written += buf.length;
        if (written > size) {
          throw new ImageError('data-loss', `blob ${digest} is larger than the ${size} bytes its descriptor declares: refusing it`);
        }
        hash.update(buf);
        await handle.write(buf);
        progress?.(written);
      }
      if (written !== size) {
        throw new ImageError('data-loss', `blob ${digest}: received ${written} bytes, the descriptor declares ${size}: refusing it`);
      }
      const actual = `sha256:${hash.digest('hex')}`;
      if (actual !== digest) {
        throw new ImageError(
          'data-loss',
          `blob ${digest}: the downloaded content has digest ${actual}: refusing it (corrupt registry storage or a tampered download)`,
        );
      }
      await handle.sync();
      await handle.close();
      await rename(temp, this.layout.blob(digest));
      await fsyncDir(this.layout.blobsDir);
    } catch (err) {
      if (typeof (source as Readable).destroy === 'function') (source as Readable).destroy();
      await handle.close().catch(() => {});
      await rm(temp, { force: true });
      if (err instanceof ImageError) throw err;
      throw new ImageError('unavailable', `blob ${digest}: download failed after ${written} of ${size} bytes: ${(err as Error).message}`, { cause: err });
    }
  }

  async remove(digest: string): Promise<void> {
    await this.trash.discard(this.layout.blob(digest));
  }
}

export function sha256(data: Buffer | string): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}
