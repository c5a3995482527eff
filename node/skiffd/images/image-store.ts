// Image records on disk and the name index in memory: ids, tags and repo digests all resolve
// through here. Records are written atomically; the index is rebuilt from them at startup.
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { readJson, writeJsonAtomic, TEMP_PREFIX } from '../util/atomic-file.ts';
import type { ImageRecord } from './image-record.ts';
import { parseReference, pullKey } from './reference.ts';
import { hex, type StoreLayout } from './store-layout.ts';

export class ImageStore {
  readonly byId = new Map<string, ImageRecord>();
  private readonly byName = new Map<string, string>();

  constructor(private readonly layout: StoreLayout) {}

  async load(warn: (msg: string, fields?: Record<string, unknown>) => void): Promise<void> {
    await mkdir(this.layout.recordsDir, { recursive: true });
    for (const name of await readdir(this.layout.recordsDir)) {
      const path = join(this.layout.recordsDir, name);
      if (name.startsWith(TEMP_PREFIX)) {
        // A temp file that will not go is left: it must not keep the daemon from starting.
        await rm(path, { force: true }).catch((err) => warn('cannot delete leftovers; leaving them', { path, err: String(err) }));
        continue;
      }
      const record = await readJson<ImageRecord>(path).catch((err) => {
        warn('ignoring an unreadable image record', { path, err });
        return undefined;
      });
      if (record?.version !== 1 || `${hex(record.id)}.json` !== name) continue;
      this.index(record);
    }
  }

  all(): ImageRecord[] {
    return [...this.byId.values()];
  }

  /** By id (`sha256:hex` or hex), tag, repo digest, or a unique id prefix. */
  find(spec: string): ImageRecord | undefined {
    const text = spec.trim();
    if (/^(sha256:)?[a-f0-9]{64}$/.test(text)) {
      const found = this.byId.get(text.startsWith('sha256:') ? text : `sha256:${text}`);
      if (found) return found;
    }
    let key: string | undefined;
    try {
      key = pullKey(parseReference(text));
    } catch {
      key = undefined;
    }
    const id = key ? this.byName.get(key) : undefined;
    if (id) return this.byId.get(id);
    const prefix = /^(?:sha256:)?([a-f0-9]{4,63})$/.exec(text)?.[1];
    if (prefix) {
      const matches = [...this.byId.keys()].filter((k) => k.startsWith(`sha256:${prefix}`));
      if (matches.length === 1) return this.byId.get(matches[0]);
    }
    return undefined;
  }

  /** The id a tag or digest name currently points at. */
  idForName(name: string): string | undefined {
    return this.byName.get(name);
  }

  async save(record: ImageRecord): Promise<void> {
    await writeJsonAtomic(this.layout.record(record.id), record);
    const old = this.byId.get(record.id);
    if (old) this.unindex(old);
    this.index(record);
  }

  async delete(record: ImageRecord): Promise<void> {
    this.unindex(record);
    await rm(this.layout.record(record.id), { force: true });
  }

  private index(record: ImageRecord): void {
    this.byId.set(record.id, record);
    for (const name of [...record.repoTags, ...record.repoDigests]) this.byName.set(name, record.id);
  }

  private unindex(record: ImageRecord): void {
    this.byId.delete(record.id);
    for (const name of [...record.repoTags, ...record.repoDigests]) {
      if (this.byName.get(name) === record.id) this.byName.delete(name);
    }
  }
}
