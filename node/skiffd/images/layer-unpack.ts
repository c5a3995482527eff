// Unpacks one layer tarball into a directory ready to be an overlayfs lowerdir. OCI whiteouts become
// overlay whiteouts: `.wh.NAME` a 0/0 character device, `.wh..wh..opq` the `trusted.overlay.opaque`
// xattr on its directory. Ownership, modes, times, hard links, symlinks, device nodes and xattrs are
// kept, except overlayfs's own `trusted.overlay.*` (opaque, redirect, metacopy, origin...): those
// steer how the overlay resolves the layers below, so only the whiteout above may set one. The caller unpacks into a temp dir and renames it into place, so a half-unpacked layer is
// never used.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, lchown, link, lstat, lutimes, mkdir, open, rm, symlink } from 'node:fs/promises';
import { execFile, spawn } from 'node:child_process';
import { join, posix } from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import tar from 'tar-stream';
import type { Header } from 'tar-stream';
import { ImageError } from './errors.ts';
import type { Logger } from '../logger.ts';

export interface UnpackResult {
  diffId: string;
  /** Uncompressed tar bytes. */
  tarSize: number;
  /** Bytes of regular file content. */
  contentBytes: number;
  /** Entries created (an upper bound on inodes used). */
  entries: number;
}

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

/** The xattr namespace overlayfs keeps its own state in (a mount without `userxattr`, as skiffd's). */
const OVERLAY_XATTR_PREFIX = 'trusted.overlay.';

export async function unpackLayer(blobPath: string, target: string, what: string, log?: Pick<Logger, 'debug'>): Promise<UnpackResult> {
  const compression = await sniffCompression(blobPath);
  await mkdir(target, { recursive: true, mode: 0o755 });
  const raw = createReadStream(blobPath, { highWaterMark: 256 * 1024 });
  let decompressed: Readable;
  let child: ReturnType<typeof spawn> | undefined;
  if (compression === 'gzip') {
    decompressed = raw.pipe(createGunzip({ chunkSize: 128 * 1024 }));
    raw.on('error', (err) => decompressed.destroy(err));
  } else if (compression === 'zstd') {
    raw.destroy();
    child = spawn('zstd', ['-dc', '--no-progress', blobPath], { stdio: ['ignore', 'pipe', 'pipe'] });
    decompressed = child.stdout!;
  } else {
    decompressed = raw;
  }

  const hash = createHash('sha256');
  let tarSize = 0;
  const tap = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash.update(chunk);
      tarSize += chunk.length;
      cb(null, chunk);
    },
  });
  decompressed.on('error', (err) => tap.destroy(new ImageError('data-loss', `${what}: cannot decompress (${compression}): ${err.message}`)));
  decompressed.pipe(tap);

  const childDone = child ? waitChild(child, what) : Promise.resolve();
  const extract = tar.extract();
  // The iterator must exist before data flows: an entry parsed with nobody listening is never consumed.
  const entries = {
    [Symbol.asyncIterator]: (
      (it) => () =>
        it
    )(extract[Symbol.asyncIterator]()),
  };
  tap.on('error', (err) => extract.destroy(err));
  tap.pipe(extract);

  const state: UnpackState = { root: target, dirs: new Map(), knownDirs: new Set(['']), contentBytes: 0, entries: 0, what, skippedXattrs: new Map() };
  try {
    for await (const entry of entries) {
      await applyEntry(state, entry.header, entry);
      entry.resume();
    }
    // Whatever follows the end-of-archive marker still counts towards the diff id.
    if (!tap.readableEnded) {
      tap.unpipe(extract);
      tap.resume();
      await new Promise<void>((resolve, reject) => {
        if (tap.readableEnded) return resolve();
        tap.once('end', resolve);
        tap.once('error', reject);
      });
    }
    await childDone;
  } catch (err) {
    raw.destroy();
    child?.kill('SIGKILL');
    if (err instanceof ImageError) throw err;
    throw new ImageError('data-loss', `${what}: invalid layer: ${(err as Error).message}`, { cause: err });
  }
  if (state.skippedXattrs.size > 0) {
    log?.debug('ignored overlayfs xattrs in the layer: only whiteouts may set them', {
      layer: what,
      xattrs: [...state.skippedXattrs.keys()].sort().join(','),
      entries: [...state.skippedXattrs.values()].reduce((a, b) => a + b, 0),
    });
  }
  // Directory times last: creating their children changed them.
  for (const [abs, meta] of [...state.dirs].reverse()) {
    await lutimes(abs, meta.mtime, meta.mtime).catch(() => {});
  }
  return { diffId: `sha256:${hash.digest('hex')}`, tarSize, contentBytes: state.contentBytes, entries: state.entries };
}

interface UnpackState {
  root: string;
  dirs: Map<string, { mtime: Date }>;
  knownDirs: Set<string>;
  contentBytes: number;
  entries: number;
  what: string;
  /** `trusted.overlay.*` names found on entries and not applied -> how many times. */
  skippedXattrs: Map<string, number>;
}

async function sniffCompression(path: string): Promise<'gzip' | 'zstd' | 'none'> {
  const handle = await open(path, 'r');
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(4), 0, 4, 0);
    if (bytesRead >= 2 && buffer[0] === 0x1f && buffer[1] === 0x8b) return 'gzip';
    if (bytesRead === 4 && buffer.readUInt32LE(0) === 0xfd2fb528) return 'zstd';
    return 'none';
  } finally {
    await handle.close();
  }
}

function waitChild(child: ReturnType<typeof spawn>, what: string): Promise<void> {
  let stderr = '';
  child.stderr?.on('data', (d) => (stderr += String(d)));
  return new Promise((resolve, reject) => {
    child.on('error', (err) =>
      reject(
        new ImageError(
          'failed-precondition',
          (err as NodeJS.ErrnoException).code === 'ENOENT'
            ? `${what} is zstd-compressed: install the zstd command (Debian package "zstd") to pull it`
            : `${what}: zstd failed: ${err.message}`,
        ),
      ),
    );
    child.on('close', (code) => (code === 0 ? resolve() : reject(new ImageError('data-loss', `${what}: zstd -d failed (${code}): ${stderr.trim()}`))));
  });
}

/** A path inside the layer, refusing anything that would climb out of it. '' is the root. */
function cleanPath(name: string, what: string): string {
  const normal = posix
    .normalize('/' + name)
    .slice(1)
    .replace(/\/+$/, '');
  if (normal.split('/').includes('..')) throw new ImageError('data-loss', `${what}: entry "${name}" escapes the layer root`);
  return normal === '.' ? '' : normal;
}

async function ensureParents(state: UnpackState, rel: string): Promise<void> {
  const parts = rel.split('/');
  parts.pop();
  let prefix = '';
  for (const part of parts) {
    prefix = prefix ? `${prefix}/${part}` : part;
    if (state.knownDirs.has(prefix)) continue;
    const abs = join(state.root, prefix);
    const st = await lstat(abs).catch(() => undefined);
    if (!st) {
      await mkdir(abs, { mode: 0o755 });
      state.entries++;
    } else if (st.isSymbolicLink()) {
      throw new ImageError('data-loss', `${state.what}: entry "${rel}" goes through the symlink "${prefix}" of the same layer`);
    } else if (!st.isDirectory()) {
      await rm(abs, { force: true });
      await mkdir(abs, { mode: 0o755 });
    }
    state.knownDirs.add(prefix);
  }
}

async function removeExisting(abs: string, keepDir: boolean): Promise<boolean> {
  const st = await lstat(abs).catch(() => undefined);
  if (!st) return false;
  if (keepDir && st.isDirectory()) return true;
  await rm(abs, { recursive: true, force: true });
  return false;
}

/** The part of a tar entry stream we use (tar-stream entries are streamx streams). */
interface EntryBody extends AsyncIterable<unknown> {
  resume(): unknown;
}

async function applyEntry(state: UnpackState, header: Header, body: EntryBody): Promise<void> {
  const rel = cleanPath(header.name, state.what);
  const abs = rel === '' ? state.root : join(state.root, rel);
  const base = posix.basename(rel);

  if (base.startsWith('.wh.')) {
    body.resume();
    const dir = posix.dirname(rel) === '.' ? '' : posix.dirname(rel);
    await ensureParents(state, rel);
    if (base === '.wh..wh..opq') {
      await setXattr(join(state.root, dir), 'trusted.overlay.opaque', 'y', state.what);
    } else if (!base.startsWith('.wh..wh.')) {
      const victim = join(state.root, dir, base.slice(4));
      await removeExisting(victim, false);
      await runTool('mknod', ['-m', '0', victim, 'c', '0', '0'], state.what);
      state.entries++;
    }
    return;
  }

  if (rel !== '') await ensureParents(state, rel);
  if (header.type !== 'directory' && state.knownDirs.has(rel)) {
    // A directory replaced by something else: its subtree may no longer be trusted as plain dirs.
    for (const known of [...state.knownDirs]) if (known === rel || known.startsWith(`${rel}/`)) state.knownDirs.delete(known);
  }
  const mode = (header.mode ?? 0o644) & 0o7777;
  switch (header.type) {
    case 'directory': {
      if (rel !== '') {
        const isDir = await removeExisting(abs, true);
        if (!isDir) {
          await mkdir(abs, { mode: 0o700 });
          state.entries++;
        }
        state.knownDirs.add(rel);
      }
      body.resume();
      state.dirs.set(abs, { mtime: header.mtime ?? new Date(0) });
      break;
    }
    case 'file':
    case 'contiguous-file':
    case undefined:
    case null: {
      await removeExisting(abs, false);
      const handle = await open(abs, 'wx', 0o600);
      try {
        for await (const chunk of body) {
          await handle.write(chunk as Buffer);
          state.contentBytes += (chunk as Buffer).length;
        }
      } finally {
        await handle.close();
      }
      state.entries++;
      break;
    }
    case 'symlink': {
      body.resume();
      await removeExisting(abs, false);
      await symlink(header.linkname ?? '', abs);
      state.entries++;
      break;
    }
    case 'link': {
      body.resume();
      const target = cleanPath(header.linkname ?? '', state.what);
      if (target === '') throw new ImageError('data-loss', `${state.what}: hard link "${rel}" has no target`);
      await ensureParents(state, target);
      await removeExisting(abs, false);
      try {
        await link(join(state.root, target), abs);
      } catch (err) {
        throw new ImageError('data-loss', `${state.what}: hard link "${rel}" -> "${target}": ${(err as Error).message}`);
      }
      return; // a hard link shares the target's inode, owner and mode
    }
    case 'character-device':
    case 'block-device':
    case 'fifo': {
      body.resume();
      await removeExisting(abs, false);
      const kind =
        header.type === 'fifo' ? ['p'] : [header.type === 'character-device' ? 'c' : 'b', String(header.devmajor ?? 0), String(header.devminor ?? 0)];
      await runTool('mknod', ['-m', '0600', abs, ...kind], state.what);
      state.entries++;
      break;
    }
    default:
      body.resume();
      return;
  }

  await lchown(abs, header.uid ?? 0, header.gid ?? 0).catch((err) => {
    if (isRoot) throw err;
  });
  if (header.type !== 'symlink') await chmod(abs, mode); // after chown, which clears set-id bits
  if (header.type !== 'directory') {
    const t = header.mtime ?? new Date(0);
    await lutimes(abs, t, t).catch(() => {});
  }
  const pax = header.pax as Record<string, string> | null | undefined;
  if (pax) {
    for (const [key, value] of Object.entries(pax)) {
      if (!key.startsWith('SCHILY.xattr.')) continue;
      const name = key.slice('SCHILY.xattr.'.length);
      if (name.startsWith(OVERLAY_XATTR_PREFIX)) {
        state.skippedXattrs.set(name, (state.skippedXattrs.get(name) ?? 0) + 1);
        continue;
      }
      await setXattr(abs, name, value, state.what, true);
      // tar-stream hands PAX values over as UTF-8 text, so a binary xattr (file capabilities) may
      // arrive mangled; see the README's limits.
    }
  }
}

async function setXattr(path: string, name: string, value: string, what: string, binary = false): Promise<void> {
  // Node has no xattr call; setfattr (Debian package "attr") does it. Values from the tar go as base64.
  const encoded = binary ? '0s' + Buffer.from(value, 'utf8').toString('base64') : value;
  await runTool('setfattr', ['-h', '-n', name, '-v', encoded, path], what);
}

function runTool(cmd: string, args: string[], what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: 30_000 }, (err, _stdout, stderr) => {
      if (!err) return resolve();
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        const pkg = cmd === 'setfattr' ? 'attr' : 'coreutils';
        return reject(new ImageError('failed-precondition', `${what}: unpacking needs the ${cmd} command (Debian package "${pkg}")`));
      }
      reject(new ImageError('internal', `${what}: ${cmd} ${args.join(' ')}: ${String(stderr).trim() || err.message}`));
    });
  });
}

/** Flushes the filesystem holding `dir` (one syncfs instead of an fsync per file). */
export function syncFilesystem(dir: string): Promise<void> {
  return new Promise((resolve) => execFile('sync', ['-f', dir], { timeout: 120_000 }, () => resolve()));
}
