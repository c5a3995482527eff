// How the OCI runtime seam reads the runtime's failures: what means "already gone" (a stop that raced
// the container's exit succeeds) and what is a real error. The runtime here is a script that answers
// the way runc does, so each case is exact.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CliOciRuntime } from '../../node/skiffd/oci/runc.ts';

function runtimeSaying(t: { after(fn: () => void): void }, message: string): CliOciRuntime {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-fake-runc-'));
  const script = join(dir, 'runc');
  writeFileSync(script, `#!/bin/sh\necho 'time="2026-01-01T00:00:00Z" level=error msg="${message}"' >&2\nexit 1\n`);
  chmodSync(script, 0o755);
  const runtime = new CliOciRuntime({ path: script, root: join(dir, 'root') });
  t.after(() => {
    runtime.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return runtime;
}

test('kill: a container whose cgroup systemd already removed is gone, not an error', async (t) => {
  // runc kill --all freezes the cgroup first; under the systemd driver an exited container's scope
  // cgroup can vanish in between.
  const gone = runtimeSaying(t, 'seek /sys/fs/cgroup/test.slice/skiffd-abc.scope/cgroup.freeze: no such device');
  await gone.kill('abc', 9, true);
  const missing = runtimeSaying(t, 'container does not exist');
  await missing.kill('abc', 9);
});

test("kill: any other failure is reported with the runtime's message", async (t) => {
  const denied = runtimeSaying(t, 'open /sys/fs/cgroup/test.slice/skiffd-abc.scope/cgroup.freeze: permission denied');
  await assert.rejects(denied.kill('abc', 9, true), /kill abc 9: open .*cgroup\.freeze: permission denied/);
});
