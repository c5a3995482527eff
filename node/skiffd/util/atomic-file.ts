// Every fact skiffd keeps on disk goes through here, so a crash leaves either the old or the new
// content, never a torn file: write a temp file beside the target, fsync it, rename, fsync the dir.
import { open, rename, rm, readFile, mkdir } from 'node:fs/promises';
import { dirname, basename, join } from 'node:path';
import { randomBytes } from 'node:crypto';

export const TEMP_PREFIX = '.tmp-';

export async function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o644): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true });
  const temp = join(dir, `${TEMP_PREFIX}${basename(path)}-${randomBytes(6).toString('hex')}`);
  const handle = await open(temp, 'w', mode);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } catch (err) {
    await handle.close().catch(() => {});
    await rm(temp, { force: true });
    throw err;
  }
  await handle.close();
  try {
    await rename(temp, path);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
  await fsyncDir(dir);
}

export async function writeJsonAtomic(path: string, value: unknown): Promise<void> {
  await writeFileAtomic(path, JSON.stringify(value, null, 2) + '\n');
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
