// Builds small test images in memory (tar layers from busybox-static, configs, Docker schema2 and OCI
// manifests, multi-platform indexes) and pushes them to a registry through the distribution API.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';

export interface TarEntry {
  name: string;
  type?: 'file' | 'directory' | 'symlink' | 'link' | 'character-device' | 'fifo';
  mode?: number;
  uid?: number;
  gid?: number;
  content?: Buffer | string;
  linkname?: string;
  devmajor?: number;
  devminor?: number;
  /** PAX records, e.g. { 'SCHILY.xattr.user.x': 'v' } for an xattr. */
  pax?: Record<string, string>;
}

export const sha256 = (data: Buffer | string) => `sha256:${createHash('sha256').update(data).digest('hex')}`;

export async function buildTar(entries: TarEntry[]): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  const done = new Promise<void>((resolve, reject) => {
    pack.on('data', (c: unknown) => {
      chunks.push(c as Buffer);
    });
    pack.on('end', resolve);
    pack.on('error', reject);
  });
  const mtime = new Date('2024-01-01T00:00:00Z');
  for (const e of entries) {
    const type = e.type ?? 'file';
    const content = e.content === undefined ? undefined : Buffer.from(e.content);
    const header = {
      name: e.name,
      type,
      mode: e.mode ?? (type === 'directory' ? 0o755 : 0o644),
      uid: e.uid ?? 0,
      gid: e.gid ?? 0,
      mtime,
      linkname: e.linkname,
      devmajor: e.devmajor,
      devminor: e.devminor,
      ...(e.pax ? { pax: e.pax } : {}),
      size: type === 'file' ? (content?.length ?? 0) : 0,
    };
    await new Promise<void>((resolve, reject) =>
      type === 'file'
        ? pack.entry(header, content ?? Buffer.alloc(0), (err) => (err ? reject(err) : resolve()))
        : pack.entry(header, (err) => (err ? reject(err) : resolve())),
    );
  }
  pack.finalize();
  await done;
  return Buffer.concat(chunks);
}

const APPLETS = ['sh', 'ls', 'cat', 'echo', 'id', 'true', 'false', 'sleep', 'env', 'ps', 'test', 'stat', 'mkdir', 'rm'];

/** A minimal busybox rootfs: /bin/busybox, applet symlinks, /etc/passwd with a user "app" (1000). */
export function busyboxBaseEntries(): TarEntry[] {
  const busybox = readFileSync('/bin/busybox');
  return [
    { name: 'bin/', type: 'directory' },
    { name: 'bin/busybox', content: busybox, mode: 0o755 },
    ...APPLETS.map((a): TarEntry => ({ name: `bin/${a}`, type: 'symlink', linkname: 'busybox' })),
    { name: 'dev/', type: 'directory' },
    { name: 'dev/null', type: 'character-device', mode: 0o666, devmajor: 1, devminor: 3 },
    { name: 'etc/', type: 'directory' },
    { name: 'etc/passwd', content: 'root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\n' },
    { name: 'etc/group', content: 'root:x:0:\napp:x:1000:\n' },
    { name: 'etc/to-remove', content: 'this file is whited out by the next layer\n' },
    { name: 'home/', type: 'directory' },
    { name: 'home/app/', type: 'directory', uid: 1000, gid: 1000, mode: 0o750 },
    { name: 'opt/', type: 'directory' },
    { name: 'opt/old/', type: 'directory' },
    { name: 'opt/old/a.txt', content: 'hidden by an opaque directory above\n' },
    { name: 'tmp/', type: 'directory', mode: 0o1777 },
    { name: 'root/', type: 'directory', mode: 0o700 },
  ];
}

/** A second layer with a whiteout, an opaque directory, a hard link and a setuid file. */
export function overlayTestEntries(marker: string): TarEntry[] {
  return [
    { name: 'etc/', type: 'directory' },
    { name: 'etc/.wh.to-remove', content: '' },
    { name: 'etc/marker', content: `${marker}\n` },
    { name: 'opt/', type: 'directory' },
    { name: 'opt/old/', type: 'directory' },
    { name: 'opt/old/.wh..wh..opq', content: '' },
    { name: 'opt/old/b.txt', content: 'only this one is visible\n' },
    { name: 'usr/share/data.txt', content: 'linked\n', uid: 1000, gid: 1000, mode: 0o640 },
    { name: 'usr/share/data-link.txt', type: 'link', linkname: 'usr/share/data.txt' },
    { name: 'usr/bin/setuid-tool', content: '#!/bin/sh\n', mode: 0o4755 },
  ];
}

export interface Blob {
  mediaType: string;
  digest: string;
  size: number;
  data: Buffer;
}

export interface BuiltImage {
  format: 'docker' | 'oci';
  config: Blob;
  layers: Blob[];
  manifest: Blob;
  diffIds: string[];
  platform: { os: string; architecture: string; variant?: string };
}

export interface ImageOptions {
  format: 'docker' | 'oci';
  layers: Buffer[]; // uncompressed tars
  user?: string;
  cmd?: string[];
  entrypoint?: string[];
  env?: string[];
  workingDir?: string;
  stopSignal?: string;
  architecture?: string;
  variant?: string;
  /** Changes the config (and so the image id) without changing layers. */
  label?: string;
  /** Layer compression (OCI only for zstd); default gzip. */
  compression?: 'gzip' | 'zstd';
}

/** zstd through the zstd command (Debian package "zstd"). */
export function zstdCompress(data: Buffer): Buffer {
  return execFileSync('zstd', ['-q', '-c', '-3'], { input: data, maxBuffer: 256 * 1024 * 1024, timeout: 30_000 });
}

const blob = (mediaType: string, data: Buffer): Blob => ({ mediaType, data, digest: sha256(data), size: data.length });

export function buildImage(o: ImageOptions): BuiltImage {
  const docker = o.format === 'docker';
  if (docker && o.compression === 'zstd') throw new Error('Docker schema2 has no zstd layer type');
  const layers = o.layers.map((t) =>
    o.compression === 'zstd'
      ? blob('application/vnd.oci.image.layer.v1.tar+zstd', zstdCompress(t))
      : blob(docker ? 'application/vnd.docker.image.rootfs.diff.tar.gzip' : 'application/vnd.oci.image.layer.v1.tar+gzip', gzipSync(t)),
  );
  const diffIds = o.layers.map((t) => sha256(t));
  const platform = { os: 'linux', architecture: o.architecture ?? 'amd64', ...(o.variant ? { variant: o.variant } : {}) };
  const configJson = {
    created: '2024-01-01T00:00:00Z',
    ...platform,
    config: {
      User: o.user ?? '',
      Env: o.env ?? ['PATH=/bin:/usr/bin'],
      Entrypoint: o.entrypoint,
      Cmd: o.cmd ?? ['/bin/sh'],
      WorkingDir: o.workingDir ?? '',
      StopSignal: o.stopSignal,
      Labels: o.label ? { 'test.label': o.label } : undefined,
    },
    rootfs: { type: 'layers', diff_ids: diffIds },
    history: o.layers.map(() => ({ created: '2024-01-01T00:00:00Z', created_by: 'skiff test builder' })),
  };
  const config = blob(
    docker ? 'application/vnd.docker.container.image.v1+json' : 'application/vnd.oci.image.config.v1+json',
    Buffer.from(JSON.stringify(configJson)),
  );
  const manifestType = docker ? 'application/vnd.docker.distribution.manifest.v2+json' : 'application/vnd.oci.image.manifest.v1+json';
  const manifestJson = {
    schemaVersion: 2,
    mediaType: manifestType,
    config: { mediaType: config.mediaType, digest: config.digest, size: config.size },
    layers: layers.map((l) => ({ mediaType: l.mediaType, digest: l.digest, size: l.size })),
  };
  return { format: o.format, config, layers, manifest: blob(manifestType, Buffer.from(JSON.stringify(manifestJson, null, 2))), diffIds, platform };
}

export function buildIndex(format: 'docker' | 'oci', images: BuiltImage[]): Blob {
  const mediaType = format === 'docker' ? 'application/vnd.docker.distribution.manifest.list.v2+json' : 'application/vnd.oci.image.index.v1+json';
  const json = {
    schemaVersion: 2,
    mediaType,
    manifests: images.map((i) => ({ mediaType: i.manifest.mediaType, digest: i.manifest.digest, size: i.manifest.size, platform: i.platform })),
  };
  return blob(mediaType, Buffer.from(JSON.stringify(json, null, 2)));
}

/** Pushes blobs and manifests through the distribution API (monolithic uploads). */
export class Pusher {
  constructor(
    private readonly base: string, // http://127.0.0.1:PORT
    private readonly authorization?: string,
  ) {}

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return this.authorization ? { Authorization: this.authorization, ...extra } : extra;
  }

  async blob(repo: string, b: Blob): Promise<void> {
    const head = await fetch(`${this.base}/v2/${repo}/blobs/${b.digest}`, { method: 'HEAD', headers: this.headers(), signal: AbortSignal.timeout(10_000) });
    if (head.status === 200) return;
    const start = await fetch(`${this.base}/v2/${repo}/blobs/uploads/`, { method: 'POST', headers: this.headers(), signal: AbortSignal.timeout(10_000) });
    if (start.status !== 202) throw new Error(`starting upload of ${b.digest} to ${repo}: HTTP ${start.status} ${await start.text()}`);
    const location = new URL(start.headers.get('location')!, this.base);
    location.searchParams.set('digest', b.digest);
    const put = await fetch(location, {
      method: 'PUT',
      headers: this.headers({ 'Content-Type': 'application/octet-stream', 'Content-Length': String(b.size) }),
      body: new Uint8Array(b.data),
      signal: AbortSignal.timeout(30_000),
    });
    if (put.status !== 201) throw new Error(`uploading ${b.digest} to ${repo}: HTTP ${put.status} ${await put.text()}`);
  }

  async manifest(repo: string, reference: string, m: Blob): Promise<void> {
    const res = await fetch(`${this.base}/v2/${repo}/manifests/${reference}`, {
      method: 'PUT',
      headers: this.headers({ 'Content-Type': m.mediaType }),
      body: new Uint8Array(m.data),
      signal: AbortSignal.timeout(10_000),
    });
    if (res.status !== 201) throw new Error(`pushing manifest ${reference} to ${repo}: HTTP ${res.status} ${await res.text()}`);
  }

  async image(repo: string, image: BuiltImage, tag?: string): Promise<void> {
    for (const l of image.layers) await this.blob(repo, l);
    await this.blob(repo, image.config);
    await this.manifest(repo, tag ?? image.manifest.digest, image.manifest);
  }

  async index(repo: string, index: Blob, images: BuiltImage[], tag: string): Promise<void> {
    for (const i of images) await this.image(repo, i);
    await this.manifest(repo, tag, index);
  }
}
