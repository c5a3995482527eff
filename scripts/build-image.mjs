// `node build.mjs image`: dist/image/, an OCI image layout of the GraphQL server that any registry
// client (skopeo, crane, oras) pushes as is, built without a container daemon. One layer: the Node
// binary that runs this build with the shared libraries it links (as ldd lists them), and the bundled
// server (dist/server.mjs, which carries GraphiQL's assets). No shell, no package manager.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';
import { SERVER_NODE_FLAGS } from './build-server.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

export const IMAGE_PORT = 4000;
const UID = 1000;

/** The shared objects a binary needs, as the dynamic loader resolves them here (ldd's absolute paths). */
function sharedLibraries(binary) {
  let out;
  try {
    out = execFileSync('ldd', [binary], { encoding: 'utf8' });
  } catch (err) {
    throw new Error(`cannot list the libraries of ${binary} with ldd (install libc-bin): ${err.message}`);
  }
  const libs = [];
  for (const line of out.split('\n')) {
    const m = /=>\s+(\/\S+)/.exec(line) ?? /^\s*(\/\S+)\s+\(/.exec(line);
    if (m) libs.push(m[1]);
  }
  return libs;
}

async function layerTar(files) {
  const pack = tar.pack();
  const chunks = [];
  pack.on('data', (c) => chunks.push(c));
  const done = new Promise((resolve, reject) => {
    pack.on('end', resolve);
    pack.on('error', reject);
  });
  const dirs = new Set();
  const entry = (header, body) =>
    new Promise((resolve, reject) => pack.entry({ mtime: new Date(0), uid: 0, gid: 0, ...header }, body, (err) => (err ? reject(err) : resolve())));
  const ensureDir = async (dir) => {
    if (dir === '' || dirs.has(dir)) return;
    await ensureDir(dirname(dir) === '.' ? '' : dirname(dir));
    dirs.add(dir);
    await entry({ name: `${dir}/`, type: 'directory', mode: 0o755 });
  };
  for (const f of files) {
    await ensureDir(dirname(f.path) === '.' ? '' : dirname(f.path));
    if (f.type === 'directory') {
      if (!dirs.has(f.path)) {
        dirs.add(f.path);
        await entry({ name: `${f.path}/`, type: 'directory', mode: f.mode ?? 0o755, uid: f.uid ?? 0, gid: f.uid ?? 0 });
      }
    } else {
      await entry({ name: f.path, mode: f.mode ?? 0o644 }, f.content);
    }
  }
  pack.finalize();
  await done;
  return Buffer.concat(chunks);
}

const sha256 = (buf) => `sha256:${createHash('sha256').update(buf).digest('hex')}`;

/**
 * @param {{ outdir?: string, server?: string, node?: string, tag?: string, quiet?: boolean }} [options]
 * @returns {Promise<{ dir: string, tag: string, manifestDigest: string, layerBytes: number }>}
 */
export async function build(options = {}) {
  const outdir = options.outdir ?? join(root, 'dist', 'image');
  const server = options.server ?? join(root, 'dist', 'server.mjs');
  const node = realpathSync(options.node ?? process.execPath);
  const tag = options.tag ?? pkg.version;
  if (!existsSync(server)) throw new Error(`${relative(root, server) || server} is missing: build the server first (node build.mjs server)`);
  if (process.platform !== 'linux') throw new Error('the image holds a Linux Node binary: build it on Linux');

  const files = [{ path: 'usr/local/bin/node', content: readFileSync(node), mode: 0o755 }];
  for (const lib of sharedLibraries(node)) {
    files.push({ path: lib.replace(/^\//, ''), content: readFileSync(realpathSync(lib)), mode: statSync(realpathSync(lib)).mode & 0o777 });
  }
  files.push(
    { path: 'app/server.mjs', content: readFileSync(server) },
    { path: 'etc/passwd', content: `root:x:0:0:root:/root:/sbin/nologin\nnode:x:${UID}:${UID}:node:/app:/sbin/nologin\n` },
    { path: 'etc/group', content: `root:x:0:\nnode:x:${UID}:\n` },
    { path: 'tmp', type: 'directory', mode: 0o1777 },
  );
  const tarball = await layerTar(files);
  const layer = gzipSync(tarball, { level: 1 });

  const arch = { x64: 'amd64', arm64: 'arm64' }[process.arch] ?? process.arch;
  const config = Buffer.from(
    JSON.stringify({
      created: '1970-01-01T00:00:00Z',
      architecture: arch,
      os: 'linux',
      config: {
        User: `${UID}:${UID}`,
        Entrypoint: ['/usr/local/bin/node', ...SERVER_NODE_FLAGS, '/app/server.mjs'],
        Env: ['PATH=/usr/local/bin:/usr/bin:/bin', 'NODE_ENV=production', 'HOST=0.0.0.0', `PORT=${IMAGE_PORT}`],
        WorkingDir: '/app',
        ExposedPorts: { [`${IMAGE_PORT}/tcp`]: {} },
        StopSignal: 'SIGTERM',
        Labels: { 'org.opencontainers.image.title': 'skiff GraphQL server', 'org.opencontainers.image.version': pkg.version },
      },
      rootfs: { type: 'layers', diff_ids: [sha256(tarball)] },
      history: [{ created: '1970-01-01T00:00:00Z', created_by: `node build.mjs image (node ${process.version})` }],
    }),
  );
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: sha256(config), size: config.length },
      layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: sha256(layer), size: layer.length }],
    }),
  );
  const index = {
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.index.v1+json',
    manifests: [
      {
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        digest: sha256(manifest),
        size: manifest.length,
        platform: { architecture: arch, os: 'linux' },
        annotations: { 'org.opencontainers.image.ref.name': tag },
      },
    ],
  };

  await rm(outdir, { recursive: true, force: true });
  await mkdir(join(outdir, 'blobs', 'sha256'), { recursive: true });
  for (const blob of [layer, config, manifest]) await writeFile(join(outdir, 'blobs', 'sha256', sha256(blob).slice(7)), blob);
  await writeFile(join(outdir, 'index.json'), JSON.stringify(index));
  await writeFile(join(outdir, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  if (!options.quiet) console.log(`${relative(root, outdir)}  ${(layer.length / 1024 / 1024).toFixed(1)} MB layer, tag ${tag}, node ${process.version}`);
  return { dir: outdir, tag, manifestDigest: sha256(manifest), layerBytes: layer.length };
}
