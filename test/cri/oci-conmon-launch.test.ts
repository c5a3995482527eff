// A conmon that cannot start fails the create at once and says why, instead of running into the
// create's deadline.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWithConmon } from '../../node/skiffd/oci/conmon.ts';
import { OciRuntimeError } from '../../node/skiffd/oci/runtime.ts';
import { needs } from '../support/prereq.ts';

/** A bundle directory conmon can be pointed at; nothing in it needs to run. */
function launchDirs(t: { after: (fn: () => void) => void }) {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-conmon-launch-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const bundle = join(dir, 'bundle');
  for (const d of [bundle, join(dir, 'exits'), join(dir, 'persist'), join(dir, 'sockets')]) mkdirSync(d, { recursive: true });
  return {
    id: 'a'.repeat(64),
    bundle,
    logPath: join(dir, 'ctr.log'),
    exitDir: join(dir, 'exits'),
    persistDir: join(dir, 'persist'),
    socketDir: join(dir, 'sockets'),
    timeoutMs: 20_000,
  };
}

test('a conmon that refuses its flags fails the create at once, with what conmon said', { timeout: 60_000 }, async (t) => {
  if (!needs(t, { commands: ['conmon', 'runc'] })) return;
  const o = launchDirs(t);
  const started = Date.now();
  const err = await createWithConmon(
    { conmonPath: 'conmon', runtimePath: 'runc', runtimeRoot: join(o.bundle, 'runc'), conmonFlags: ['--no-such-flag'] },
    o,
  ).then(
    () => assert.fail('the create succeeded'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof OciRuntimeError, String(err));
  assert.match(err.message, /no-such-flag/, err.message);
  assert.doesNotMatch(err.message, /did not report/, 'a failure, not the deadline');
  assert.ok(Date.now() - started < o.timeoutMs, 'answered before the deadline');
});

test('a conmon that is not there fails the create at once, naming it', { timeout: 60_000 }, async (t) => {
  if (!needs(t, { commands: ['runc'] })) return;
  const o = launchDirs(t);
  const missing = join(o.bundle, 'no-conmon-here');
  const err = await createWithConmon({ conmonPath: missing, runtimePath: 'runc', runtimeRoot: join(o.bundle, 'runc') }, o).then(
    () => assert.fail('the create succeeded'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof OciRuntimeError, String(err));
  assert.ok(err.message.includes(missing), err.message);
  assert.doesNotMatch(err.message, /did not report/, 'a failure, not the deadline');
});
