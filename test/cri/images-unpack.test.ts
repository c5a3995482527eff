// Layer unpacking never writes outside the layer directory (.. is resolved against the layer root,
// symlinks of the layer are not followed), reports the uncompressed digest, and applies no overlayfs
// xattr (`trusted.overlay.*`) a layer carries: only its `.wh..wh..opq` whiteout makes a directory opaque.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { unpackLayer } from '../../node/skiffd/images/layer-unpack.ts';
import { buildTar, sha256, type TarEntry } from '../support/image-builder.ts';
import { needs } from '../support/prereq.ts';

async function unpack(t: { after(fn: () => void): void }, entries: TarEntry[], log?: { debug(msg: string, fields?: Record<string, unknown>): void }) {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-unpack-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const tarball = await buildTar(entries);
  writeFileSync(join(dir, 'layer.tgz'), gzipSync(tarball));
  const outside = join(dir, 'outside');
  return { dir, outside, tarball, run: () => unpackLayer(join(dir, 'layer.tgz'), join(dir, 'fs'), 'test layer', log) };
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

/** Every xattr of a path (trusted.* included: root sees them), as name -> text value. */
function xattrs(path: string): Record<string, string> {
  const out = execFileSync('getfattr', ['-h', '-d', '-m', '-', '--absolute-names', path], { encoding: 'utf8' });
  const found: Record<string, string> = {};
  for (const line of out.split('\n')) {
    const m = /^([^#=][^=]*)="(.*)"$/.exec(line);
    if (m) found[m[1]!] = m[2]!;
  }
  return found;
}

const xattr = (name: string, value: string) => ({ [`SCHILY.xattr.${name}`]: value });

test("a layer's own trusted.overlay.* xattrs are not applied; its opaque whiteout and other xattrs are", async (t) => {
  if (!needs(t, { root: true, commands: ['setfattr', 'getfattr'] })) return;
  const logged: [string, Record<string, unknown> | undefined][] = [];
  const u = await unpack(
    t,
    [
      { name: 'd/', type: 'directory', pax: xattr('trusted.overlay.opaque', 'y') },
      { name: 'd/new', content: 'n' },
      {
        name: 'f',
        content: 'x',
        pax: { ...xattr('trusted.overlay.redirect', '/etc'), ...xattr('trusted.overlay.metacopy', 'm'), ...xattr('user.kept', 'yes') },
      },
      { name: 'g', content: 'y', pax: xattr('trusted.overlay.origin', 'o') },
      { name: 'o/', type: 'directory' },
      { name: 'o/.wh..wh..opq', content: '' },
    ],
    { debug: (msg, fields) => logged.push([msg, fields]) },
  );
  await u.run();
  const fs = join(u.dir, 'fs');
  assert.deepEqual(xattrs(join(fs, 'd')), {}, 'the tar entry cannot make d opaque');
  assert.deepEqual(xattrs(join(fs, 'f')), { 'user.kept': 'yes' }, 'other xattrs are kept');
  assert.deepEqual(xattrs(join(fs, 'g')), {});
  assert.deepEqual(xattrs(join(fs, 'o')), { 'trusted.overlay.opaque': 'y' }, 'the opaque whiteout still works');
  assert.equal(logged.length, 1, `one debug line for the layer: ${JSON.stringify(logged)}`);
  assert.deepEqual(logged[0]![1], {
    layer: 'test layer',
    xattrs: 'trusted.overlay.metacopy,trusted.overlay.opaque,trusted.overlay.origin,trusted.overlay.redirect',
    entries: 4,
  });
});

test('an image layer cannot hide the layers below it through overlayfs xattrs', async (t) => {
  if (!needs(t, { root: true, commands: ['setfattr', 'mount', 'umount'] })) return;
  const lower = await unpack(t, [{ name: 'd/base', content: 'from the base layer' }]);
  const upper = await unpack(t, [
    { name: 'd/', type: 'directory', pax: xattr('trusted.overlay.opaque', 'y') },
    { name: 'd/new', content: 'from the upper layer' },
  ]);
  await lower.run();
  await upper.run();
  const merged = join(upper.dir, 'merged');
  mkdirSync(merged);
  // Two lower dirs and no upper: a read-only overlay, as a container's image layers are stacked.
  execFileSync('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=${join(upper.dir, 'fs')}:${join(lower.dir, 'fs')}`, merged]);
  try {
    assert.deepEqual(readdirSync(join(merged, 'd')).sort(), ['base', 'new']);
  } finally {
    execFileSync('umount', [merged]);
  }
});
