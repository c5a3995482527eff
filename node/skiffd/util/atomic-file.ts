// Every file skiffd keeps on disk goes through here, so a crash leaves either the old or the new
// content, never a torn file: write a temp file beside the target, fsync it, rename, fsync the dir
// (`writeFileAtomic`, for facts); or the same without the syncs (`replaceFile`, for what a fact commits).
import { open, rename, rm, readFile, mkdir, type FileHandle } from 'node:fs/promises';
import { dirname, basename, join } from 'node:path';
import { randomBytes } from 'node:crypto';

export const TEMP_PREFIX = '.tmp-';

export async function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o644): Promise<void> {
  await renameOrDrop(await writeTemp(path, data, mode, true), path);
  await fsyncDir(dirname(path));
}

/**
 * The same without fsync: a crash of the daemon still leaves the old or the new content, but a power
 * cut may lose either. For files that a synced record commits and that a power cut makes moot, like
 * an OCI bundle's config.json (its container dies with the node). On an emulated or busy node each
 * file system call is a thread-pool round trip of a millisecond, and the syncs are four of them.
 */
export async function replaceFile(path: string, data: string | Uint8Array, mode = 0o644): Promise<void> {
  await renameOrDrop(await writeTemp(path, data, mode, false), path);
}

/** Writes `data` to a new temp file beside `path` (synced if asked) and returns its path; nothing is left on failure. */
async function writeTemp(path: string, data: string | Uint8Array, mode: number, sync: boolean): Promise<string> {
  const temp = tempPathFor(path);
  const handle = await openCreating(temp, mode);
  try {
    await handle.writeFile(data);
    if (sync) await handle.sync();
  } catch (err) {
    await handle.close().catch(() => {});
    await rm(temp, { force: true });
    throw err;
  }
  await handle.close();
  return temp;
}

function tempPathFor(path: string): string {
  return join(dirname(path), `${TEMP_PREFIX}${basename(path)}-${randomBytes(6).toString('hex')}`);
}

/** Opens a new file for writing, making its directory only when it is missing (one call fewer when it is there). */
async function openCreating(path: string, mode: number): Promise<FileHandle> {
  try {
    return await open(path, 'w', mode);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    await mkdir(dirname(path), { recursive: true });
    return open(path, 'w', mode);
  }
}

async function renameOrDrop(temp: string, path: string): Promise<void> {
  try {
    await rename(temp, path);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
}

export async function writeJsonAtomic(path: string, value: unknown): Promise<void> {
  await writeFileAtomic(path, jsonText(value));
}

/** `replaceFile` for a JSON value, written as `writeJsonAtomic` writes it. */
export async function replaceJson(path: string, value: unknown): Promise<void> {
  await replaceFile(path, jsonText(value));
}

function jsonText(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** Parsed JSON, or undefined when the file does not exist. A corrupt file is an error naming the path. */
export async function readJson<T>(path: string): Promise<T | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    return JSON.parse(text) as T;
  } catch (err) {
    throw new Error(`corrupt state file ${path}: ${(err as Error).message}`);
  }
}

export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
