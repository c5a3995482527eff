// A single executable carries the attach add-on as an asset and must write it to disk to load it.
// It goes into a private directory under skiffd's state dir (not the shared temp dir, where a root
// container with a hostPath /tmp could swap the file between write and load), is loaded through the
// descriptor it was written with, and is gone afterwards.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as seqpacket from '../../node/skiffd/streaming/backends/seqpacket.ts';
import { unavailable } from '../support/prereq.ts';

const require = createRequire(import.meta.url);
function addonBytes(): Buffer | undefined {
  try {
    return readFileSync(require.resolve(`${seqpacket.ADDON_PACKAGE}/${seqpacket.ADDON_FILE}`));
  } catch {
    return undefined;
  }
}
const asset = addonBytes();
const missing = asset ? undefined : `${seqpacket.ADDON_PACKAGE} is not installed`;

function stateDir(t: import('node:test').TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'skiffd-state-'));
  chmodSync(dir, 0o711);
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('the add-on is extracted into a private directory under the state dir, loads, and leaves no file', (t) => {
  if (missing) return unavailable(t, missing);
  assert.equal(typeof seqpacket.extractAddon, 'function', 'seqpacket.ts extracts into a given directory');
  const dir = join(stateDir(t), 'addon');
  const binding = seqpacket.extractAddon(asset!, dir) as { SeqpacketSocketWrap?: unknown };
  assert.equal(typeof binding.SeqpacketSocketWrap, 'function');
  const st = statSync(dir);
  assert.ok(st.isDirectory());
  assert.equal(st.mode & 0o777, 0o700);
  assert.equal(st.uid, process.geteuid?.());
  assert.deepEqual(readdirSync(dir), []);
});

test('an addon directory others can write is made private; a symlink in its place is refused', (t) => {
  if (missing) return unavailable(t, missing);
  const state = stateDir(t);
  const dir = join(state, 'addon');
  mkdirSync(dir);
  chmodSync(dir, 0o777);
  seqpacket.extractAddon(asset!, dir);
  assert.equal(statSync(dir).mode & 0o777, 0o700);

  const elsewhere = mkdtempSync(join(tmpdir(), 'skiffd-elsewhere-'));
  t.after(() => rmSync(elsewhere, { recursive: true, force: true }));
  const linked = join(state, 'linked');
  symlinkSync(elsewhere, linked);
  assert.throws(() => seqpacket.extractAddon(asset!, linked), /symbolic link/);
  assert.deepEqual(readdirSync(elsewhere), []);
});

test('loading never extracts into the shared temp dir, and the cwd is not where node_modules is looked up', () => {
  const source = readFileSync(new URL('../../node/skiffd/streaming/backends/seqpacket.ts', import.meta.url), 'utf8');
  assert.doesNotMatch(source, /tmpdir\(\)/);
  assert.doesNotMatch(source, /process\.cwd\(\)/);
});
