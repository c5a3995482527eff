// skiffd's state files: written whole or not at all, in a directory made when missing, no temp left behind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readJson, replaceFile, TEMP_PREFIX, writeFileAtomic, writeJsonAtomic } from '../../node/skiffd/util/atomic-file.ts';

for (const [name, write] of [
  ['writeFileAtomic (synced)', writeFileAtomic],
  ['replaceFile (not synced)', replaceFile],
] as const) {
  test(`${name}: makes a missing directory, replaces the content whole, keeps the mode and leaves no temp file`, async (t) => {
    const root = await mkdtemp(join(tmpdir(), 'skiff-atomic-'));
    t.after(() => rm(root, { recursive: true, force: true }));
    const path = join(root, 'a', 'b', 'config.json');
    await write(path, '{"first":true}\n', 0o600);
    assert.equal(await readFile(path, 'utf8'), '{"first":true}\n');
    assert.equal((await stat(path)).mode & 0o777, 0o600);
    await write(path, '{"second":true}\n');
    assert.deepEqual(await readJson(path), { second: true });
    assert.deepEqual(await readdir(join(root, 'a', 'b')), ['config.json']);
  });

  test(`${name}: a write that cannot land fails with the system's error and leaves no temp file`, async (t) => {
    const root = await mkdtemp(join(tmpdir(), 'skiff-atomic-'));
    t.after(() => rm(root, { recursive: true, force: true }));
    // A non-empty directory where the file should go: the rename fails.
    const path = join(root, 'taken');
    await mkdir(join(path, 'inside'), { recursive: true });
    await assert.rejects(write(path, 'new'), (err: NodeJS.ErrnoException) => err.code === 'EISDIR' || err.code === 'ENOTEMPTY');
    const left = (await readdir(root)).filter((f) => f.startsWith(TEMP_PREFIX));
    assert.deepEqual(left, []);
    // And a parent that is a file: no directory can be made, the error says so.
    await writeJsonAtomic(join(root, 'file'), {});
    await assert.rejects(write(join(root, 'file', 'x.json'), '{}'), (err: NodeJS.ErrnoException) => err.code === 'ENOTDIR');
  });
}
