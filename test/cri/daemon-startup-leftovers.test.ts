// Start-up sweeps of what a crash left behind (the containers' trash, the image store's trash, its
// unfinished downloads and half-written records): an entry that will not go is left with a warning
// naming it and why, and the daemon starts anyway. A throw there would fail every start, and under
// systemd loop for ever.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { TEMP_PREFIX } from '../../node/skiffd/util/atomic-file.ts';
import { needs, unavailable } from '../support/prereq.ts';
import { startSkiffd } from '../support/skiffd.ts';

const chattr = (flag: '+i' | '-i', path: string) => spawnSync('chattr', [flag, path], { encoding: 'utf8' });

test('leftovers that cannot be deleted are left with a warning; the daemon still starts and the rest is swept', { timeout: 90_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['chattr'] })) return;
  const dir = mkdtempSync(join(tmpdir(), 'skiffd-leftovers-'));
  chmodSync(dir, 0o711);
  const root = join(dir, 'root');
  const stuck = [
    join(root, 'containers-trash', `${'a'.repeat(64)}-0123abcd`),
    join(root, 'images', 'trash', '0123456789abcdef'),
    join(root, 'images', 'tmp', 'pull-1'),
  ];
  const swept = [join(root, 'containers-trash', `${'b'.repeat(64)}-4567cdef`), join(root, 'images', 'trash', 'fedcba9876543210')];
  for (const entry of [...stuck, ...swept]) {
    mkdirSync(entry, { recursive: true });
    writeFileSync(join(entry, 'file'), 'x');
  }
  // A half-written image record: a file, not a tree.
  const record = join(root, 'images', 'records', `${TEMP_PREFIX}0123.json`);
  mkdirSync(dirname(record), { recursive: true });
  writeFileSync(record, '{');
  const immutable = [...stuck.map((entry) => join(entry, 'file')), record];
  t.after(() => {
    for (const file of immutable) chattr('-i', file);
    rmSync(dir, { recursive: true, force: true });
  });
  // An immutable file: not even root can delete it, as with a mount that will not come off.
  for (const file of immutable) {
    const r = chattr('+i', file);
    if (r.status !== 0) return unavailable(t, `chattr +i does not work on ${tmpdir()}: ${r.stderr.trim()}`);
  }

  const d = await startSkiffd({ dir });
  t.after(() => d.cleanup());
  assert.equal((await d.runtime.version({})).runtimeName, 'skiffd', 'the daemon serves');
  const warnings = d
    .logs()
    .split('\n')
    .filter((line) => line.includes('cannot delete leftovers'));
  for (const entry of [...stuck, record]) {
    assert.ok(existsSync(entry), `${entry} is left`);
    const said = warnings.find((line) => line.includes(entry));
    assert.ok(said, `a warning names ${entry}:\n${d.logs()}`);
    // Why: rm's words for a tree it could not delete (the immutable file), an errno for a single file.
    assert.match(said, /err="?Error: (E[A-Z]+|rm -rf .* failed \(exit code 1\): rm: cannot remove .*: Operation not permitted)/, 'and says why');
  }
  for (const entry of swept) assert.equal(existsSync(entry), false, `${entry} is deleted`);
});
