// The OCI runtime's `features` is asked once per daemon: recursive read-only mounts and user
// namespaces are both decided from that one reading (node/skiffd/oci/features.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { which } from '../../node/skiffd/util/which.ts';
import { needs } from '../support/prereq.ts';
import { startSkiffd } from '../support/skiffd.ts';

test("the runtime's features are read once and serve rro and user namespaces alike", { timeout: 120_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'unshare'] })) return;
  const dir = mkdtempSync(join(tmpdir(), 'skiff-oci-features-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  chmodSync(dir, 0o711);
  // runc, noting each `features` call.
  const calls = join(dir, 'features-calls');
  const runtime = join(dir, 'runc');
  writeFileSync(runtime, `#!/bin/sh\n[ "$1" = features ] && echo called >> '${calls}'\nexec '${which('runc')}' "$@"\n`);
  chmodSync(runtime, 0o755);

  const d = await startSkiffd({ config: `[runtime]\nruntime_path = "${runtime}"\n` });
  t.after(() => d.cleanup());
  // Status waits for the user namespace check and reads the rro feature: both need `features`.
  for (let i = 0; i < 2; i++) {
    const s = await d.runtime.status({});
    assert.equal(s.runtimeHandlers[0]?.features?.userNamespaces, true, 'user namespaces as runc lists them');
  }
  assert.ok(existsSync(calls), '`features` was run');
  assert.equal(readFileSync(calls, 'utf8').trim().split('\n').length, 1, 'asked once');
});
