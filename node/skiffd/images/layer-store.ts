// Unpacked layers, one directory per diff id. A layer is unpacked into the temp dir, checked against
// its diff id, flushed, and renamed into place: a directory under layers/ is always complete.
import { copyFile, link, mkdir, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ImageError } from './errors.ts';
import { syncFilesystem, unpackLayer } from './layer-unpack.ts';
import { hex, type StoreLayout } from './store-layout.ts';
import { fsyncDir, readJson } from '../util/atomic-file.ts';
import type { Trash } from './trash.ts';
import type { Logger } from '../logger.ts';

export interface LayerInfo {
  diffId: string;
  /** The compressed blob it came from. */
  digest: string;
  /** Bytes of file content and entries (inodes) in the unpacked tree. */
  bytes: number;
  inodes: number;
  unpackedAt: string;
}

export class LayerStore {
  private readonly inflight = new Map<string, Promise<LayerInfo>>();
  /** diff id -> info, for every committed layer. */
  readonly layers = new Map<string, LayerInfo>();

  constructor(
    private readonly layout: StoreLayout,
    private readonly trash: Trash,
  ) {}

  async load(warn: (msg: string, fields?: Record<string, unknown>) => void): Promise<void> {
    await mkdir(this.layout.layersDir, { recursive: true });
    for (const name of await readdir(this.layout.layersDir)) {
      const dir = join(this.layout.layersDir, name);
      const info = await readJson<LayerInfo>(join(dir, 'layer.json')).catch(() => undefined);
      if (!info || hex(info.diffId) !== name) {
        warn('removing an unusable layer directory', { dir });
        await this.discard(dir);
        continue;
      }
      this.layers.set(info.diffId, info);
    }
  }

  has(diffId: string): boolean {
    return this.layers.has(diffId);
  }

  fsDir(diffId: string): string {
    return this.layout.layerFs(diffId);
  }

  /** Unpacks the blob unless the layer is there; concurrent callers share one unpack. */
  ensure(diffId: string, digest: string, blobPath: string, what: string, log?: Pick<Logger, 'debug'>): Promise<LayerInfo> {
    const known = this.layers.get(diffId);
    if (known) return Promise.resolve(known);
    const running = this.inflight.get(diffId);
    if (running) return running;
    const job = this.unpack(diffId, digest, blobPath, what, log).finally(() => this.inflight.delete(diffId));
    this.inflight.set(diffId, job);
    return job;
  }

  /**
   * An artifact's volume tree under `key` (its manifest digest): one file per entry, hard links to the
   * verified blobs (a copy across filesystems), so a large artifact is not stored twice. Names were
   * checked to be plain file names (artifact-layout.ts).
   */
  ensureTree(key: string, files: readonly { name: string; source: string }[]): Promise<LayerInfo> {
    const known = this.layers.get(key);
    if (known) return Promise.resolve(known);
    const running = this.inflight.get(key);
    if (running) return running;
    const job = this.commit(key, key, async (fs) => {
      await mkdir(fs, { mode: 0o755 });
      let bytes = 0;
      for (const f of files) {
        const target = join(fs, f.name);
        try {
          await link(f.source, target);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
          await copyFile(f.source, target);
          bytes += (await stat(target)).size;
        }
      }
      return { bytes, inodes: files.length + 1 };
    }).finally(() => this.inflight.delete(key));
    this.inflight.set(key, job);
    return job;
  }

  private async unpack(diffId: string, digest: string, blobPath: string, what: string, log?: Pick<Logger, 'debug'>): Promise<LayerInfo> {
    return this.commit(diffId, digest, async (fs) => {
      const result = await unpackLayer(blobPath, fs, what, log);
      if (result.diffId !== diffId) {
        throw new ImageError('data-loss', `${what}: its uncompressed content has digest ${result.diffId}, the image config says ${diffId}: refusing it`);
      }
      return { bytes: result.contentBytes, inodes: result.entries + 1 };
    });
  }

  /** Builds the layer's `fs` in the temp dir, flushes it and renames it into place: a directory under layers/ is always complete. */
  private async commit(diffId: string, digest: string, build: (fs: string) => Promise<{ bytes: number; inodes: number }>): Promise<LayerInfo> {
    await mkdir(this.layout.tmpDir, { recursive: true });
    const temp = join(this.layout.tmpDir, `layer-${hex(diffId).slice(0, 12)}-${randomBytes(6).toString('hex')}`);
    try {
      await mkdir(temp);
      const built = await build(join(temp, 'fs'));
      const info: LayerInfo = { diffId, digest, bytes: built.bytes, inodes: built.inodes, unpackedAt: new Date().toISOString() };
      // Plain write: the temp dir as a whole is flushed and then renamed into place.
      await writeFile(join(temp, 'layer.json'), JSON.stringify(info, null, 2) + '\n');
      await syncFilesystem(temp);
      await mkdir(this.layout.layersDir, { recursive: true });
      const final = this.layout.layer(diffId);
      try {
        await rename(temp, final);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
        await rm(temp, { recursive: true, force: true });
      }
      await fsyncDir(this.layout.layersDir);
      this.layers.set(diffId, info);
      return info;
    } catch (err) {
      await rm(temp, { recursive: true, force: true }).catch(() => {});
      throw err;
    }
  }

  /** Takes the layer out of service at once (a rename) and deletes it after the call. */
  async remove(diffId: string): Promise<void> {
    this.layers.delete(diffId);
    await this.discard(this.layout.layer(diffId));
  }

  private async discard(dir: string): Promise<void> {
    await this.trash.discard(dir);
  }
}
