// How the OCI runtime seam reads a failed `kill`: what means the container is already gone (a stop
// that raced its exit succeeds) and what is a real error. The messages are runc's own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { killFoundNothing } from '../../node/skiffd/oci/runc.ts';

test('kill: a container whose cgroup systemd already removed is gone, not an error', () => {
  // runc kill --all freezes the cgroup first; under the systemd driver an exited container's scope
  // cgroup can vanish in between (critest's HostNetwork spec hit it on a systemd node).
  assert.equal(killFoundNothing('seek /sys/fs/cgroup/test.slice/skiffd-abc.scope/cgroup.freeze: no such device'), true);
  assert.equal(killFoundNothing('container does not exist'), true);
  assert.equal(killFoundNothing('container not running'), true);
});

test("kill: any other failure is reported with the runtime's message", () => {
  assert.equal(killFoundNothing('open /sys/fs/cgroup/test.slice/skiffd-abc.scope/cgroup.freeze: permission denied'), false);
  assert.equal(killFoundNothing('no such device'), false, 'ENODEV counts only on a cgroup file');
});
