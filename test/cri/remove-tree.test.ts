// removeTree and sweepDir: the recursive delete behind RemoveContainer, RemovePodSandbox, image removal
// and the start-up sweeps. A process still inside the tree (a container holding its detached overlay)
// can swap a directory for a symlink while the tree is deleted; the delete must never follow it out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeTree, sweepDir } from '../../node/skiffd/util/remove-tree.ts';
import { needs } from '../support/prereq.ts';

function scratch(t: { after(fn: () => void): void }, name: string): string {
  const dir = mkdtempSync(join(tmpdir(), `skiff-remove-tree-${name}-`));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** `outside` with files c0..c{n-1} that nothing may delete. */
function canaries(outside: string, n: number): string[] {
  mkdirSync(outside, { recursive: true });
  const names = Array.from({ length: n }, (_, i) => `c${i}`);
  for (const name of names) writeFileSync(join(outside, name), 'canary');
  return names;
}

const missing = (outside: string, names: string[]) => names.filter((n) => !existsSync(join(outside, n)));

test('removeTree deletes a tree of directories, files and links; a missing path is done', async (t) => {
  const dir = scratch(t, 'plain');
  const root = join(dir, 'tree');
  mkdirSync(join(root, 'a', 'b', 'c'), { recursive: true });
  for (let i = 0; i < 20; i++) writeFileSync(join(root, 'a', 'b', `f${i}`), 'x');
  writeFileSync(join(root, 'a', 'b', 'c', 'deep'), 'x');
  symlinkSync('/does/not/exist', join(root, 'a', 'dangling'));
  await removeTree(root);
  assert.equal(existsSync(root), false);
  await removeTree(root);
  await removeTree(join(dir, 'no-parent', 'child'));
});

test('removeTree deletes a symlink to an outside directory, not what it points at', async (t) => {
  const dir = scratch(t, 'link');
  const outside = join(dir, 'outside');
  const names = canaries(outside, 10);
  const root = join(dir, 'tree');
  mkdirSync(join(root, 'sub'), { recursive: true });
  symlinkSync(outside, join(root, 'sub', 'escape'));
  symlinkSync(outside, join(root, 'escape-top'));
  await removeTree(root);
  assert.equal(existsSync(root), false);
  assert.deepEqual(missing(outside, names), []);
});

test('removeTree walks by directory handle, not by path: a tree deeper than PATH_MAX is deleted', async (t) => {
  // A walker that names every file by its full path (fs.rm) fails here with ENAMETOOLONG, leaving the
  // tree; one that goes from directory fd to directory fd (rm's fts) has no such limit. Deterministic
  // evidence of the walker the race below relies on; a container can make such a tree too.
  const dir = scratch(t, 'deep');
  const root = join(dir, 'tree');
  mkdirSync(root);
  const name = 'd'.repeat(60);
  // bash: dash's cd gives up once its idea of the path passes PATH_MAX.
  execFileSync('bash', ['-c', `cd "$1" || exit 1; for i in $(seq 100); do mkdir ${name} && cd ${name} || exit 1; done; echo x > leaf`, 'bash', root], {
    timeout: 30_000,
  });
  await removeTree(root);
  assert.equal(existsSync(root), false);
});

// Runs outside this process (the delete may be in this process's thread pool or a child): for each
// directory in turn, move it away, put a symlink to `outside` in its place, then put it back; until the
// deadline, the round count, or SIGKILL.
const SWAPPER = `
const fs = require('node:fs');
const [tree, stash, outside, count, ms] = process.argv.slice(1);
const deadline = Date.now() + Number(ms);
process.stdout.write('ready\\n');
for (let round = 0; round < 1e6 && Date.now() < deadline; round++) {
  let alive = 0;
  for (let i = 0; i < Number(count); i++) {
    const d = tree + '/d' + i, s = stash + '/d' + i;
    try { fs.renameSync(d, s); } catch { continue; }
    alive++;
    try { fs.symlinkSync(outside, d); for (let k = 0; k < 200; k++) fs.lstatSync(d); fs.unlinkSync(d); } catch {}
    try { fs.renameSync(s, d); } catch {}
  }
  if (alive === 0 && !fs.existsSync(tree)) break;
}
`;

function startSwapper(tree: string, stash: string, outside: string, count: number, ms: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['-e', SWAPPER, tree, stash, outside, String(count), String(ms)], {
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: ms + 10_000,
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.stdout!.once('data', () => resolve(child));
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }
}

test('removeTree racing a directory swapped for a symlink to the outside never deletes outside files', async (t) => {
  const dir = scratch(t, 'race');
  const outside = join(dir, 'outside');
  // The tree's files have the canaries' names: a delete that follows the link finds them all.
  const names = canaries(outside, 60);
  const DIRS = 40;
  const ROUNDS = 12;
  const failures: string[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const root = join(dir, `tree${round}`);
    const stash = join(dir, `stash${round}`);
    mkdirSync(stash);
    for (let i = 0; i < DIRS; i++) {
      mkdirSync(join(root, `d${i}`), { recursive: true });
      for (const n of names) writeFileSync(join(root, `d${i}`, n), 'inside');
    }
    const swapper = await startSwapper(root, stash, outside, DIRS, 5_000);
    // Under attack the delete may fail (a directory vanished or changed under it): that is allowed, as
    // is leaving part of the tree; following the link is not.
    await removeTree(root).catch((err) => failures.push(String(err)));
    await stop(swapper);
    assert.deepEqual(missing(outside, names), [], `round ${round}: files outside the tree were deleted through a swapped symlink`);
    // With nothing racing it, what is left goes.
    await removeTree(root);
    await removeTree(stash);
    assert.equal(existsSync(root), false);
  }
  t.diagnostic(`${failures.length} of ${ROUNDS} deletes under attack reported an error`);
});

test("sweepDir deletes each entry and leaves, with a warning carrying rm's words, what will not go", async (t) => {
  if (!needs(t, { root: true, commands: ['mount', 'umount'] })) return;
  const dir = scratch(t, 'sweep');
  const sweep = join(dir, 'sweep');
  mkdirSync(join(sweep, 'a', 'b'), { recursive: true });
  writeFileSync(join(sweep, 'a', 'b', 'f'), 'x');
  writeFileSync(join(sweep, 'file'), 'x');
  // A mount below an entry is taken off before the delete (and what it shows is not deleted).
  const shown = join(dir, 'shown');
  const names = canaries(shown, 3);
  mkdirSync(join(sweep, 'mounted', 'at'), { recursive: true });
  execFileSync('mount', ['--bind', shown, join(sweep, 'mounted', 'at')], { timeout: 10_000 });
  const warnings: Array<[string, Record<string, unknown>]> = [];
  await sweepDir(sweep, (msg, fields) => warnings.push([msg, fields]));
  assert.deepEqual(readdirSync(sweep), []);
  assert.deepEqual(warnings, []);
  assert.deepEqual(missing(shown, names), []);

  // Entries on a read-only mount cannot be deleted: reported, left, and the sweep goes on.
  const ro = join(dir, 'ro');
  mkdirSync(join(ro, 'stuck', 'x'), { recursive: true });
  writeFileSync(join(ro, 'stuck', 'x', 'f'), 'x');
  execFileSync('mount', ['--bind', ro, ro], { timeout: 10_000 });
  try {
    execFileSync('mount', ['-o', 'remount,bind,ro', ro], { timeout: 10_000 });
    const left: Array<[string, Record<string, unknown>]> = [];
    await sweepDir(ro, (msg, fields) => left.push([msg, fields]));
    assert.equal(left.length, 1, JSON.stringify(left));
    assert.equal(left[0][0], 'cannot delete leftovers; leaving them');
    assert.equal(left[0][1].path, join(ro, 'stuck'));
    assert.match(String(left[0][1].err), /Read-only file system/);
    assert.ok(existsSync(join(ro, 'stuck', 'x', 'f')));
    await assert.rejects(removeTree(join(ro, 'stuck')), /rm -rf --one-file-system -- .*stuck failed \(exit code 1\): rm: cannot remove/);
  } finally {
    // Before the scratch directory is deleted.
    execFileSync('umount', ['-l', ro], { timeout: 10_000 });
  }
});
