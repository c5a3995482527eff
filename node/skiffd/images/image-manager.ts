// The image subsystem: pulls (with in-flight sharing per reference and per blob), the store of
// records, blobs and unpacked layers, removal with garbage collection, and the queries the CRI
// ImageService and the container runtime need.
import { mkdir, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { artifactLayout } from './artifact-layout.ts';
import { BlobStore } from './blob-store.ts';
import { ImageError } from './errors.ts';
import { ImageStore } from './image-store.ts';
import type { ImageConfigDoc, ImageRecord, ImageRunConfig, LayerRef } from './image-record.ts';
import { LayerStore } from './layer-store.ts';
import type { Descriptor } from './manifest.ts';
import { resolveManifest, type ResolvedManifest } from './pull-resolve.ts';
import { formatReference, isSha256Digest, parseReference, pullKey, repositoryName, type ImageReference } from './reference.ts';
import { RegistryClient } from './registry-client.ts';
import type { Credentials, Endpoint, RegistrySettings } from './registry-config.ts';
import { mapLimit, Serial } from './serial.ts';
import { StoreLayout } from './store-layout.ts';
import { Trash } from './trash.ts';
import { mountpointOf } from './fs-usage.ts';
import type { Logger } from '../logger.ts';
import { sweepDir } from '../util/remove-tree.ts';

export interface ImageManagerOptions {
  root: string;
  registry: RegistrySettings;
  log: Logger;
  /** Layers downloaded and unpacked at once per pull. */
  parallelLayers?: number;
}

/** What the fetch step of a pull yields for the commit. */
interface FetchedContent {
  config: ImageConfigDoc;
  layers: LayerRef[];
  /** Bytes this pull downloaded (not found present or fetched by another pull). */
  fetchedBytes: number;
  artifact?: ImageRecord['artifact'];
}

/** The bound on an artifact's blobs (`registry.max_artifact_size`): a pull of a larger one is refused before it downloads. */
export const DEFAULT_MAX_ARTIFACT_BYTES = 64 * 1024 ** 3;

/** The media type recorded for an artifact's one "layer": its tree of files, not a blob from the registry. */
export const ARTIFACT_TREE_TYPE = 'application/vnd.skiff.artifact-tree';

export interface FsUsage {
  mountpoint: string;
  usedBytes: number;
  inodesUsed: number;
  timestampNs: bigint;
}

export class ImageManager {
  readonly layout: StoreLayout;
  private readonly trash: Trash;
  private readonly blobs: BlobStore;
  private readonly layers: LayerStore;
  private readonly records: ImageStore;
  private readonly serial = new Serial();
  private readonly pulls = new Map<string, Promise<ImageRecord>>();
  /** Registries whose `registry.mirrors` entry was reported as overridden by a hosts.toml. */
  private readonly shadowWarned = new Set<string>();
  /** Blob digests and diff ids an in-progress pull or a running container holds on to. */
  private readonly leases = new Map<string, number>();
  private mountpoint: string | undefined;
  private readonly stopping = new AbortController();

  private constructor(private readonly opts: ImageManagerOptions) {
    this.layout = new StoreLayout(opts.root);
    this.trash = new Trash(this.layout.trashDir);
    this.blobs = new BlobStore(this.layout, this.trash);
    this.layers = new LayerStore(this.layout, this.trash);
    this.records = new ImageStore(this.layout);
  }

  /**
   * Loads the store. Unreferenced blobs and layers are not swept here: containers re-take their
   * leases after this, and the daemon calls `sweep()` once they have (a removed image's layers may
   * still be mounted under a container).
   */
  static async open(opts: ImageManagerOptions): Promise<ImageManager> {
    const m = new ImageManager(opts);
    await m.recover();
    return m;
  }

  /** Deletes what no image record and no lease refers to; returns how many blobs and layers went. */
  async sweep(): Promise<number> {
    const removed = await this.collectGarbage();
    if (removed) this.opts.log.info('swept unreferenced image data', { removed });
    return removed;
  }

  /** Startup: drop leftovers of interrupted pulls, load records, drop records missing a layer. */
  private async recover(): Promise<void> {
    const { log } = this.opts;
    const warn = (msg: string, fields?: Record<string, unknown>) => log.warn(msg, fields);
    // What will not go is left with a warning rather than failing every start.
    await sweepDir(this.layout.tmpDir, warn);
    await this.trash.empty(warn);
    await mkdir(this.layout.blobsDir, { recursive: true });
    await this.layers.load(warn);
    await this.records.load(warn);
    for (const record of this.records.all()) {
      const missing = record.layers.find((l) => !this.layers.has(l.diffId));
      if (missing) {
        log.warn('image record refers to a missing layer: forgetting the image (pull it again)', { image: record.id, layer: missing.diffId });
        await this.records.delete(record);
      }
    }
    log.info('image store ready', { images: this.records.byId.size, layers: this.layers.layers.size, dir: this.layout.dir });
  }

  // ---- queries ----

  list(filter?: string): ImageRecord[] {
    if (filter) {
      const found = this.records.find(filter);
      return found ? [found] : [];
    }
    return this.records.all().sort((a, b) => a.id.localeCompare(b.id));
  }

  /** The record for an id, tag, repo digest or unique id prefix; undefined when absent. */
  resolve(spec: string): ImageRecord | undefined {
    return this.records.find(spec);
  }

  /** The record or a NotFound error naming the image. */
  require(spec: string): ImageRecord {
    const found = this.records.find(spec);
    if (!found) throw new ImageError('not-found', `image "${spec}" is not present on this node: pull it first`);
    return found;
  }

  /** Unpacked layer directories, lowest layer first. overlayfs wants them top first: see `lowerdir`. */
  layerDirs(spec: string): string[] {
    const record = this.require(spec);
    return record.layers.map((l) => this.layers.fsDir(l.diffId));
  }

  /** The `lowerdir=` value for an overlay mount of the image (top layer first). */
  lowerdir(spec: string): string {
    return this.layerDirs(spec).reverse().join(':');
  }

  runConfig(spec: string): ImageRunConfig {
    return this.require(spec).config.config ?? {};
  }

  /** The image's whole config document (platform, history, run config). */
  imageConfig(spec: string): ImageConfigDoc {
    return this.require(spec).config;
  }

  /**
   * Keeps the layers behind these directories (as `layerDirs` gave them) from garbage collection.
   * Containers lease by directory, not by image, so a lease survives RemoveImage and a restart:
   * the container record keeps the directories it mounted.
   */
  retainLayers(dirs: string[]): () => void {
    const wanted = new Set(dirs);
    const keys = [...this.layers.layers.keys()].filter((diffId) => wanted.has(this.layers.fsDir(diffId)));
    this.lease(keys);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.unlease(keys);
    };
  }

  async fsUsage(): Promise<FsUsage> {
    this.mountpoint ??= await mountpointOf(this.layout.dir);
    let usedBytes = 0;
    let inodesUsed = 0;
    for (const name of await readdir(this.layout.blobsDir).catch(() => [] as string[])) {
      const st = await stat(join(this.layout.blobsDir, name)).catch(() => undefined);
      if (!st) continue;
      usedBytes += st.size;
      inodesUsed++;
    }
    for (const info of this.layers.layers.values()) {
      usedBytes += info.bytes;
      inodesUsed += info.inodes;
    }
    inodesUsed += this.records.byId.size;
    return { mountpoint: this.mountpoint, usedBytes, inodesUsed, timestampNs: BigInt(Date.now()) * 1_000_000n };
  }

  // ---- pull ----

  /** Pulls `reference`; a second pull of the same reference while one runs shares its result. */
  pull(reference: string, credentials?: Credentials): Promise<ImageRecord> {
    const ref = parseReference(reference);
    const key = pullKey(ref);
    const running = this.pulls.get(key);
    if (running) {
      this.opts.log.info('joining a pull already in progress', { image: key });
      return running;
    }
    const job = this.doPull(ref, credentials).finally(() => this.pulls.delete(key));
    this.pulls.set(key, job);
    return job;
  }

  /** A pull in three steps: resolve the manifest, fetch config and layers, commit the record. */
  private async doPull(ref: ImageReference, credentials: Credentials | undefined): Promise<ImageRecord> {
    const started = Date.now();
    const name = formatReference(ref);
    const log = this.opts.log.child({ image: name });
    if (this.stopping.signal.aborted) throw new ImageError('unavailable', `cannot pull ${name}: the daemon is stopping`);
    const client = new RegistryClient(ref.registry, ref.repository, this.opts.registry, credentials, this.stopping.signal);
    if (client.shadowedMirrors && !this.shadowWarned.has(ref.registry)) {
      this.shadowWarned.add(ref.registry);
      log.warn(`registry.mirrors."${ref.registry}" is ignored: ${client.hosts?.file ?? client.hosts?.dir} decides this registry's endpoints`, {
        registry: ref.registry,
      });
    }
    log.info('pulling image', { endpoints: client.endpoints.map((e) => e.host).join(','), hostsFile: client.hosts?.file ?? client.hosts?.dir });

    const resolved = await resolveManifest(client, ref, name, log);
    const { manifest, manifestBlobs } = resolved;
    // Held until the record names them, so a sweep meanwhile leaves them alone.
    const leased = [...manifestBlobs.map((b) => b.digest), manifest.config.digest, ...manifest.layers.map((l) => l.digest)];
    this.lease(leased);
    const leasedDiffIds: string[] = [];
    try {
      const fetched = manifest.artifactType
        ? await this.fetchArtifact(client, resolved, name, log, leasedDiffIds)
        : await this.fetchContent(client, resolved, name, log, leasedDiffIds);
      const record = await this.commit(ref, resolved, fetched, log);
      log.info('pulled image', {
        id: record.id,
        layers: fetched.layers.length,
        bytes: record.size,
        downloadedBytes: fetched.fetchedBytes,
        ms: Date.now() - started,
      });
      return record;
    } finally {
      this.unlease(leased);
      this.unlease(leasedDiffIds);
    }
  }

  /**
   * Downloads the config and the layers not present yet (a few at once) and unpacks the layers.
   * The config's diff ids are leased into `leasedDiffIds`, for the caller to release.
   */
  private async fetchContent(client: RegistryClient, resolved: ResolvedManifest, name: string, log: Logger, leasedDiffIds: string[]): Promise<FetchedContent> {
    const { manifest } = resolved;
    await this.fetchBlob(client, log, manifest.config);
    let config: ImageConfigDoc;
    try {
      config = JSON.parse((await this.blobs.read(manifest.config.digest)).toString('utf8'));
    } catch {
      throw new ImageError('failed-precondition', `${name}: image config ${manifest.config.digest} is not valid JSON`);
    }
    const diffIds = config.rootfs?.diff_ids ?? [];
    const badDiffId = diffIds.find((id) => typeof id !== 'string' || !isSha256Digest(id));
    if (badDiffId !== undefined) throw new ImageError('failed-precondition', `${name}: the config lists an invalid layer diff id ${JSON.stringify(badDiffId)}`);
    if (diffIds.length !== manifest.layers.length) {
      throw new ImageError('failed-precondition', `${name}: the config lists ${diffIds.length} layer diff ids, the manifest ${manifest.layers.length} layers`);
    }
    this.lease(diffIds);
    leasedDiffIds.push(...diffIds);

    let fetchedBytes = 0;
    const layers: LayerRef[] = await mapLimit(manifest.layers, this.opts.parallelLayers ?? 3, async (layer, i) => {
      const diffId = diffIds[i];
      const ref: LayerRef = { digest: layer.digest, mediaType: layer.mediaType, size: layer.size, diffId };
      if (this.layers.has(diffId)) {
        log.debug('layer already present', { layer: layer.digest });
        return ref;
      }
      const what = `layer ${i + 1}/${manifest.layers.length} (${layer.digest})`;
      const t0 = Date.now();
      const downloaded = await this.fetchBlob(client, log, layer, { index: i + 1, of: manifest.layers.length });
      const t1 = Date.now();
      const info = await this.layers.ensure(diffId, layer.digest, this.blobs.path(layer.digest), `${name} ${what}`, log);
      if (downloaded) fetchedBytes += layer.size;
      log.info('layer ready', {
        layer: layer.digest,
        index: i + 1,
        of: manifest.layers.length,
        bytes: layer.size,
        unpackedBytes: info.bytes,
        downloaded,
        downloadMs: t1 - t0,
        unpackMs: Date.now() - t1,
      });
      return ref;
    });
    return { config, layers, fetchedBytes };
  }

  /**
   * An OCI artifact: its config and layers are stored as blobs, unparsed (their formats are the
   * artifact's own), and laid out as the image volume's tree of files. An artifact that cannot be laid
   * out is still stored, as CRI-O stores it; mounting it is refused with the reason recorded here.
   */
  private async fetchArtifact(client: RegistryClient, resolved: ResolvedManifest, name: string, log: Logger, leasedDiffIds: string[]): Promise<FetchedContent> {
    const { manifest, manifestDigest } = resolved;
    const artifactType = manifest.artifactType ?? '';
    const total = manifest.config.size + manifest.layers.reduce((s, l) => s + l.size, 0);
    const max = this.opts.registry.maxArtifactBytes ?? DEFAULT_MAX_ARTIFACT_BYTES;
    if (total > max) {
      throw new ImageError(
        'failed-precondition',
        `${name}: the artifact (${artifactType}) is ${total} bytes, more than registry.max_artifact_size (${max} bytes)`,
      );
    }
    await this.fetchBlob(client, log, manifest.config);
    let fetchedBytes = 0;
    await mapLimit(manifest.layers, this.opts.parallelLayers ?? 3, async (layer, i) => {
      if (await this.fetchBlob(client, log, layer, { index: i + 1, of: manifest.layers.length })) fetchedBytes += layer.size;
    });
    const layout = artifactLayout(manifest.layers);
    if ('problem' in layout) {
      log.warn('the artifact cannot be mounted as a volume', { artifactType, problem: layout.problem });
      return { config: {}, layers: [], fetchedBytes, artifact: { artifactType, unmountable: layout.problem } };
    }
    // CRI-O leaves such layers out with a warning too: the rest of the artifact is still of use.
    if (layout.unnamed.length > 0) {
      log.warn('artifact layers without a file name are left out of the volume', {
        artifactType,
        count: layout.unnamed.length,
        first: layout.unnamed[0],
      });
    }
    // The tree is keyed by the manifest digest; leased like a layer until the record names it.
    this.lease([manifestDigest]);
    leasedDiffIds.push(manifestDigest);
    await this.layers.ensureTree(
      manifestDigest,
      layout.files.map((f) => ({ name: f.name, source: this.blobs.path(f.digest) })),
    );
    log.info('artifact laid out', { artifactType, files: layout.files.map((f) => f.name).join(','), bytes: total });
    const tree: LayerRef = { digest: manifestDigest, mediaType: ARTIFACT_TREE_TYPE, size: total - manifest.config.size, diffId: manifestDigest };
    return { config: {}, layers: [tree], fetchedBytes, artifact: { artifactType } };
  }

  /** Stores the blob; true when this pull downloaded it (false: present, or another pull's download). */
  private async fetchBlob(client: RegistryClient, log: Logger, d: Descriptor, layer?: { index: number; of: number }): Promise<boolean> {
    const from: { endpoint?: Endpoint } = {};
    try {
      return await this.fetchBlobOnce(client, log, d, layer, from);
    } catch (err) {
      // A connection that stalled or broke mid-download gets one more try, from the next endpoint: a slow
      // mirror is skipped for the rest of the pull. Wrong content, missing content or refused credentials
      // would only fail again.
      const final = err instanceof ImageError && err.kind !== 'unavailable';
      if (final || this.stopping.signal.aborted) throw err;
      if (from.endpoint) client.demote(from.endpoint);
      log.warn('blob download failed, retrying once', { blob: d.digest, from: from.endpoint?.host, err });
      return this.fetchBlobOnce(client, log, d, layer, {});
    }
  }

  private async fetchBlobOnce(
    client: RegistryClient,
    log: Logger,
    d: Descriptor,
    layer: { index: number; of: number } | undefined,
    from: { endpoint?: Endpoint },
  ): Promise<boolean> {
    let downloaded = false;
    const started = Date.now();
    await this.blobs.ensure(
      d.digest,
      d.size,
      async () => {
        downloaded = true;
        if (layer) log.info('downloading layer', { layer: d.digest, index: layer.index, of: layer.of, bytes: d.size });
        const res = await client.openBlob(d.digest);
        from.endpoint = res.endpoint;
        if (layer) log.debug('layer download started', { layer: d.digest, from: res.endpoint.host });
        return res.body;
      },
      layer ? this.progressLogger(log, `layer ${layer.index}/${layer.of}`, d) : undefined,
    );
    if (downloaded && layer) log.debug('layer downloaded', { layer: d.digest, from: from.endpoint?.host, bytes: d.size, ms: Date.now() - started });
    return downloaded;
  }

  /** Stores the manifests and writes the image record, moving the tag from an older image. */
  private async commit(ref: ImageReference, resolved: ResolvedManifest, fetched: FetchedContent, log: Logger): Promise<ImageRecord> {
    const { manifest, manifestBlobs, manifestDigest, topDigest } = resolved;
    for (const b of manifestBlobs) await this.blobs.putBytes(b.digest, b.data);

    // An artifact's config is often the shared empty one ({}), so the manifest names it.
    const id = fetched.artifact ? manifestDigest : manifest.config.digest;
    const repo = repositoryName(ref);
    const tag = ref.digest ? undefined : `${repo}:${ref.tag}`;
    const repoDigest = `${repo}@${topDigest}`;
    const size = manifest.config.size + manifestBlobs[manifestBlobs.length - 1].data.length + manifest.layers.reduce((s, l) => s + l.size, 0);
    return this.serial.run(async () => {
      if (tag) {
        const previous = this.records.idForName(tag);
        if (previous && previous !== id) {
          const old = this.records.byId.get(previous);
          if (old) {
            await this.records.save({ ...old, repoTags: old.repoTags.filter((t) => t !== tag) });
            log.info('tag moved to the new image', { tag, from: previous, to: id });
          }
        }
      }
      const existing = this.records.byId.get(id);
      const next: ImageRecord = {
        version: 1,
        id,
        repoTags: unique([...(existing?.repoTags ?? []), ...(tag ? [tag] : [])]),
        repoDigests: unique([...(existing?.repoDigests ?? []), repoDigest]),
        size,
        manifestDigest,
        manifestMediaType: manifest.mediaType,
        layers: fetched.layers,
        blobs: unique([...(existing?.blobs ?? []), ...manifestBlobs.map((b) => b.digest), manifest.config.digest, ...manifest.layers.map((l) => l.digest)]),
        config: fetched.config,
        pulledAt: new Date().toISOString(),
        ...(fetched.artifact ? { artifact: fetched.artifact } : {}),
      };
      await this.records.save(next);
      return next;
    });
  }

  /** Progress every 5 s: at info for large layers (a pull that takes a while says how far it is), at debug for all. */
  private progressLogger(log: Logger, what: string, d: Descriptor): ((bytes: number) => void) | undefined {
    const large = d.size >= 16 * 1024 * 1024;
    if (!large && !log.enabled('debug')) return undefined;
    let last = Date.now();
    return (bytes) => {
      const now = Date.now();
      if (now - last < 5000) return;
      last = now;
      const fields = { layer: d.digest, what, bytes, of: d.size, percent: Math.floor((bytes / d.size) * 100) };
      if (large) log.info('download progress', fields);
      else log.debug('download progress', fields);
    };
  }

  // ---- remove ----

  /** Removes the image with all its tags; false when there was no such image. */
  async remove(spec: string): Promise<boolean> {
    return this.serial.run(async () => {
      const record = this.records.find(spec);
      if (!record) return false;
      await this.records.delete(record);
      const swept = await this.collectGarbageLocked();
      this.opts.log.info('removed image', { id: record.id, tags: record.repoTags.join(',') || undefined, freedBlobs: swept.blobs, freedLayers: swept.layers });
      return true;
    });
  }

  private async collectGarbage(): Promise<number> {
    const r = await this.serial.run(() => this.collectGarbageLocked());
    return r.blobs + r.layers;
  }

  /** Deletes blobs and layers no record and no lease refers to. Runs inside `serial`. */
  private async collectGarbageLocked(): Promise<{ blobs: number; layers: number }> {
    const keep = new Set<string>(this.leases.keys());
    for (const r of this.records.all()) {
      for (const b of r.blobs) keep.add(b);
      for (const l of r.layers) keep.add(l.diffId);
    }
    let blobs = 0;
    let layers = 0;
    for (const name of await readdir(this.layout.blobsDir).catch(() => [] as string[])) {
      const digest = `sha256:${name}`;
      if (keep.has(digest) || !/^[a-f0-9]{64}$/.test(name)) continue;
      await this.blobs.remove(digest);
      blobs++;
    }
    for (const diffId of [...this.layers.layers.keys()]) {
      if (keep.has(diffId)) continue;
      await this.layers.remove(diffId);
      layers++;
    }
    return { blobs, layers };
  }

  private lease(keys: string[]): void {
    for (const k of keys) this.leases.set(k, (this.leases.get(k) ?? 0) + 1);
  }

  private unlease(keys: string[]): void {
    for (const k of keys) {
      const n = (this.leases.get(k) ?? 0) - 1;
      if (n <= 0) this.leases.delete(k);
      else this.leases.set(k, n);
    }
  }

  /**
   * Fails pulls in progress at once (UNAVAILABLE, "the daemon is stopping") and refuses new ones, so
   * a shutdown need not wait for a slow registry while it drains calls.
   */
  cancelPulls(): void {
    this.stopping.abort();
  }

  /** Cancels pulls in progress (their temp files are removed, or swept at the next start) and waits for them, bounded. */
  async close(): Promise<void> {
    this.cancelPulls();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.pulls.values(), this.trash.idle()]), new Promise((resolve) => (timer = setTimeout(resolve, 5000)))]);
    clearTimeout(timer);
  }
}

function unique(items: string[]): string[] {
  return [...new Set(items)];
}
