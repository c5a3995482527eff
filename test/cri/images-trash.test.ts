// RemoveImage's trash: a discarded layer tree or blob leaves the store at once (one rename), is deleted
// in the background, and whatever a crash left in the trash is deleted at the next start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Trash } from '../../node/skiffd/images/trash.ts';

function tree(root: string): void {
  mkdirSync(join(root, 'fs', 'bin'), { recursive: true });
  mkdirSync(join(root, 'fs', 'etc', 'empty'), { recursive: true });
  writeFileSync(join(root, 'layer.json'), '{}');
  writeFileSync(join(root, 'fs', 'etc', 'passwd'), 'root:x:0:0::/root:/bin/sh\n');
  for (let i = 0; i < 50; i++) writeFileSync(join(root, 'fs', 'bin', `tool${i}`), 'x');
  symlinkSync('/etc/does-not-matter', join(root, 'fs', 'bin', 'link'));
  symlinkSync('../etc', join(root, 'fs', 'etcdir'));
}

test('trash: discarded trees and files leave at once and are deleted in the background', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-trash-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const store = join(dir, 'layers');
  const outside = join(dir, 'outside');
  mkdirSync(join(outside, 'keep'), { recursive: true });
  writeFileSync(join(outside, 'keep', 'file'), 'stays');
  tree(join(store, 'a'));
  symlinkSync(outside, join(store, 'a', 'fs', 'outside-link'));
  writeFileSync(join(store, 'blob'), 'blob data');

  const trash = new Trash(join(dir, 'trash'));
  await trash.empty();
  await trash.discard(join(store, 'a'));
  await trash.discard(join(store, 'blob'));
  await trash.discard(join(store, 'absent'));
  assert.deepEqual(readdirSync(store), [], 'gone from the store when discard returns');
  await trash.idle();
  assert.deepEqual(readdirSync(join(dir, 'trash')), [], 'deleted in the background');
  assert.equal(existsSync(join(outside, 'keep', 'file')), true, 'a symlink is deleted, never followed');
});

test('trash: leftovers of a crash are deleted at startup, and a missing trash dir is recreated', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-trash-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  tree(join(dir, 'trash', 'half-deleted'));
  const trash = new Trash(join(dir, 'trash'));
  await trash.empty();
  assert.deepEqual(readdirSync(join(dir, 'trash')), []);
  rmSync(join(dir, 'trash'), { recursive: true });
  tree(join(dir, 'layer'));
  await trash.discard(join(dir, 'layer'));
  await trash.idle();
  assert.equal(existsSync(join(dir, 'layer')), false);
  assert.deepEqual(readdirSync(join(dir, 'trash')), []);
});
