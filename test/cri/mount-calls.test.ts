// The daemon's mounts and unmounts, made by its long-lived mount(2) helper and, where that cannot run,
// by mount(8) and umount(8): the same mounts either way, as /proc/self/mountinfo shows them, the
// kernel's refusals as errors naming the cause, and paths with spaces, '%' and newlines intact.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bindMountReadOnly, mount, MountError, mountWithCommands, unmount } from '../../node/skiffd/util/mount-calls.ts';
import { needs } from '../support/prereq.ts';

const PREREQS = { root: true, commands: ['perl', 'mount', 'umount'] };

/** The mount at exactly `path`: its type and per-mount options, or undefined. */
function mountAt(path: string): { type: string; options: string[] } | undefined {
  let found: { type: string; options: string[] } | undefined;
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const dash = line.indexOf(' - ');
    if (dash < 0) continue;
    const f = line.slice(0, dash).split(' ');
    const point = f[4].replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(Number.parseInt(oct, 8)));
    // The last one listed is the one on top.
    if (point === path) found = { type: line.slice(dash + 3).split(' ')[0], options: f[5].split(',') };
  }
  return found;
}

for (const way of ['the mount(2) helper', 'mount(8) and umount(8)'] as const) {
  test(`mounts and unmounts through ${way}`, async (t) => {
    if (!needs(t, PREREQS)) return;
    mountWithCommands(way !== 'the mount(2) helper');
    const dir = mkdtempSync(join(tmpdir(), 'skiff-mount-calls-'));
    t.after(() => {
      mountWithCommands(false);
      for (const p of [join(dir, 'ro view'), join(dir, 'merged %20 x'), join(dir, 'tmp\nfs')]) if (mountAt(p)) unmount(p, { detach: true }).catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    });

    // A tmpfs with flags, at a path holding a newline.
    const tmp = join(dir, 'tmp\nfs');
    mkdirSync(tmp);
    await mount({ source: 'skiff-test', target: tmp, fstype: 'tmpfs', flags: ['nosuid', 'nodev', 'noexec'], data: 'size=1m,mode=0700' });
    const m = mountAt(tmp);
    assert.equal(m?.type, 'tmpfs');
    for (const o of ['rw', 'nosuid', 'nodev', 'noexec']) assert.ok(m!.options.includes(o), `${o} in ${m!.options}`);
    writeFileSync(join(tmp, 'f'), 'x');

    // An overlay of two read-only lower layers, at a path with a space and '%'.
    const [lower1, lower2, merged] = ['lower 1', 'lower2', 'merged %20 x'].map((n) => join(dir, n));
    for (const d of [lower1, lower2, merged]) mkdirSync(d);
    writeFileSync(join(lower1, 'a'), 'from lower 1');
    writeFileSync(join(lower2, 'a'), 'from lower 2');
    await mount({ source: 'overlay', target: merged, fstype: 'overlay', flags: ['ro'], data: `lowerdir=${lower2}:${lower1}` });
    assert.equal(mountAt(merged)?.type, 'overlay');
    assert.ok(mountAt(merged)!.options.includes('ro'));
    assert.equal(readFileSync(join(merged, 'a'), 'utf8'), 'from lower 2');

    // A read-only bind: read-only at once, the source untouched.
    const view = join(dir, 'ro view');
    mkdirSync(view);
    await bindMountReadOnly(tmp, view);
    assert.ok(mountAt(view)!.options.includes('ro'));
    assert.equal(readFileSync(join(view, 'f'), 'utf8'), 'x');
    assert.throws(() => writeFileSync(join(view, 'g'), 'y'), /EROFS/);
    writeFileSync(join(tmp, 'g'), 'y');

    // The kernel's refusals come back as errors that say why; the helper's carry the errno (and so
    // show that the helper, not mount(8), made these calls).
    const helper = way === 'the mount(2) helper';
    await assert.rejects(mount({ source: 'overlay', target: join(dir, 'absent'), fstype: 'overlay', data: `lowerdir=${lower2}:${lower1}` }), (err: Error) => {
      assert.ok(err instanceof MountError);
      assert.match(err.message, /No such file or directory|does not exist/);
      assert.equal(err.errno, helper ? 'ENOENT' : undefined);
      return true;
    });
    await assert.rejects(unmount(join(dir, 'lower2')), (err: Error) => {
      assert.ok(err instanceof MountError);
      assert.match(err.message, /Invalid argument|not mounted/);
      assert.equal(err.errno, helper ? 'EINVAL' : undefined);
      return true;
    });

    // A mount point in use is busy; a detach takes it anyway.
    await unmount(view);
    assert.equal(mountAt(view), undefined);
    await unmount(merged);
    assert.equal(mountAt(merged), undefined);
    await unmount(tmp, { detach: true });
    assert.equal(mountAt(tmp), undefined);
  });
}

test('the mount(2) helper answers many calls at once, each its own answer', async (t) => {
  if (!needs(t, PREREQS)) return;
  const dir = mkdtempSync(join(tmpdir(), 'skiff-mount-calls-'));
  const points = Array.from({ length: 20 }, (_, i) => join(dir, `p${i}`));
  t.after(async () => {
    for (const p of points) if (mountAt(p)) await unmount(p, { detach: true }).catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  });
  for (const p of points.slice(0, 15)) mkdirSync(p);
  // Five of the twenty targets do not exist: exactly those fail, with the kernel's errno.
  const results = await Promise.allSettled(points.map((p) => mount({ source: 'skiff-test', target: p, fstype: 'tmpfs', data: 'size=64k' })));
  assert.deepEqual(
    results.map((r) => r.status),
    points.map((_, i) => (i < 15 ? 'fulfilled' : 'rejected')),
  );
  for (const r of results.slice(15)) assert.equal(((r as PromiseRejectedResult).reason as MountError).errno, 'ENOENT');
  for (const p of points.slice(0, 15)) assert.equal(mountAt(p)?.type, 'tmpfs');
  await Promise.all(points.slice(0, 15).map((p) => unmount(p)));
  for (const p of points) assert.equal(mountAt(p), undefined);
});
