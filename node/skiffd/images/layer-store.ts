// Unpacked layers, one directory per diff id. A layer is unpacked into the temp dir, checked against
// its diff id, flushed, and renamed into place: a directory under layers/ is always complete.
import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
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

  private async unpack(diffId: string, digest: string, blobPath: string, what: string, log?: Pick<Logger, 'debug'>): Promise<LayerInfo> {
    await mkdir(this.layout.tmpDir, { recursive: true });
    const temp = join(this.layout.tmpDir, `layer-${hex(diffId).slice(0, 12)}-${randomBytes(6).toString('hex')}`);
    try {
      const result = await unpackLayer(blobPath, join(temp, 'fs'), what, log);
      if (result.diffId !== diffId) {
        throw new ImageError('data-loss', `${what}: its uncompressed content has digest ${result.diffId}, the image config says ${diffId}: refusing it`);
      }
      const info: LayerInfo = { diffId, digest, bytes: result.contentBytes, inodes: result.entries + 1, unpackedAt: new Date().toISOString() };
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
