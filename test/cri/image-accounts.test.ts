// CreateContainer's reads of an image's /etc/passwd and /etc/group, once per stack of layers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ImageAccountsCache } from '../../node/skiffd/containers/image-accounts.ts';

async function layer(root: string, name: string, files: Record<string, string>): Promise<string> {
  const dir = join(root, name);
  await mkdir(join(dir, 'etc'), { recursive: true });
  for (const [file, text] of Object.entries(files)) await writeFile(join(dir, 'etc', file), text);
  return dir;
}

test('an image’s accounts are read once per stack of layers, and kept apart from other stacks', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'skiff-accounts-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  const a = await layer(root, 'a', { passwd: 'root:x:0:0::/root:/bin/sh\n', group: 'root:x:0:\n' });
  const b = await layer(root, 'b', { passwd: 'app:x:1000:1000::/home/app:/bin/sh\n', group: 'app:x:1000:\n' });
  const cache = new ImageAccountsCache();
  assert.equal(cache.cached([a]), undefined);
  const first = await cache.read([a], a);
  assert.deepEqual(first, { passwd: 'root:x:0:0::/root:/bin/sh\n', group: 'root:x:0:\n' });
  // Served from memory from now on: a change under the layer (which skiffd never makes) is not seen.
  await writeFile(join(a, 'etc', 'passwd'), 'changed\n');
  assert.deepEqual(cache.cached([a]), first);
  assert.equal(cache.cached([a, b]), undefined, 'a different stack is a different image');
  assert.deepEqual(await cache.read([a, b], b), { passwd: 'app:x:1000:1000::/home/app:/bin/sh\n', group: 'app:x:1000:\n' });
  assert.deepEqual(cache.cached([a]), first);
});

test('an image without the files, or whose /etc is a symlink, reads as empty and is read again next time', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'skiff-accounts-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  const bare = join(root, 'bare');
  await mkdir(bare);
  const linked = join(root, 'linked');
  await mkdir(linked);
  await symlink('/etc', join(linked, 'etc'));
  const cache = new ImageAccountsCache();
  for (const dir of [bare, linked]) {
    assert.deepEqual(await cache.read([dir], dir), { passwd: '', group: '' });
    assert.equal(cache.cached([dir]), undefined);
  }
  // Files that appear later (never for a real layer, but a failed read looks the same) are found.
  await layer(root, 'bare', { passwd: 'root:x:0:0::/root:/bin/sh\n', group: 'root:x:0:\n' });
  assert.equal((await cache.read([bare], bare)).group, 'root:x:0:\n');
  assert.notEqual(cache.cached([bare]), undefined);
});

test('the cache holds at most 256 stacks, dropping the least recently used', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'skiff-accounts-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  const dir = await layer(root, 'l', { passwd: 'root:x:0:0::/root:/bin/sh\n', group: 'root:x:0:\n' });
  const cache = new ImageAccountsCache();
  // Same files, different stacks (the key is the list of layers, not the files read).
  for (let i = 0; i < 256; i++) await cache.read([`${dir}-${i}`], dir);
  assert.notEqual(cache.cached([`${dir}-0`]), undefined, 'used again: now the most recent');
  await cache.read([`${dir}-256`], dir);
  assert.notEqual(cache.cached([`${dir}-0`]), undefined);
  assert.equal(cache.cached([`${dir}-1`]), undefined, 'the least recently used went');
  assert.notEqual(cache.cached([`${dir}-256`]), undefined);
});
