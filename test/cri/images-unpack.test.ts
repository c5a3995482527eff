// Layer unpacking never writes outside the layer directory (.. is resolved against the layer root,
// symlinks of the layer are not followed), and reports the uncompressed digest.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { unpackLayer } from '../../node/skiffd/images/layer-unpack.ts';
import { buildTar, sha256, type TarEntry } from '../support/image-builder.ts';

async function unpack(t: { after(fn: () => void): void }, entries: TarEntry[]) {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-unpack-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const tarball = await buildTar(entries);
  writeFileSync(join(dir, 'layer.tgz'), gzipSync(tarball));
  const outside = join(dir, 'outside');
  return { dir, outside, tarball, run: () => unpackLayer(join(dir, 'layer.tgz'), join(dir, 'fs'), 'test layer') };
}

test('a plain layer unpacks and reports its diff id', async (t) => {
  const u = await unpack(t, [
    { name: 'a/b.txt', content: 'hello' },
    { name: 'a/c', type: 'symlink', linkname: 'b.txt' },
  ]);
  const r = await u.run();
  assert.equal(r.diffId, sha256(u.tarball));
  assert.equal(r.contentBytes, 5);
});

test('entries climbing out with .. stay inside the layer (resolved against its root)', async (t) => {
  const u = await unpack(t, [
    { name: '../outside', content: 'x' },
    { name: 'a/../../../outside2', content: 'y' },
  ]);
  await u.run();
  assert.ok(!existsSync(u.outside));
  assert.ok(existsSync(join(u.dir, 'fs', 'outside')));
  assert.ok(existsSync(join(u.dir, 'fs', 'outside2')));
});

test('writing through a symlink of the same layer is refused', async (t) => {
  const u0 = await unpack(t, []);
  const u = await unpack(t, [
    { name: 'evil', type: 'symlink', linkname: u0.dir },
    { name: 'evil/planted', content: 'x' },
  ]);
  await assert.rejects(u.run(), /goes through the symlink "evil"/);
  assert.ok(!existsSync(join(u0.dir, 'planted')));
});

test('a directory replaced by a symlink is not trusted afterwards', async (t) => {
  const u0 = await unpack(t, []);
  const u = await unpack(t, [
    { name: 'd/', type: 'directory' },
    { name: 'd', type: 'symlink', linkname: u0.dir },
    { name: 'd/planted', content: 'x' },
  ]);
  await assert.rejects(u.run(), /goes through the symlink "d"/);
  assert.ok(!existsSync(join(u0.dir, 'planted')));
});

test('a hard link whose target goes through a symlink is refused', async (t) => {
  const u0 = await unpack(t, []);
  writeFileSync(join(u0.dir, 'secret'), 'host file');
  const u = await unpack(t, [
    { name: 'evil', type: 'symlink', linkname: u0.dir },
    { name: 'stolen', type: 'link', linkname: 'evil/secret' },
  ]);
  await assert.rejects(u.run(), /goes through the symlink "evil"/);
  assert.ok(!existsSync(join(u.dir, 'fs', 'stolen')));
});
