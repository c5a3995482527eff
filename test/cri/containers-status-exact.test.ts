// Status is never stale: the moment conmon has written a container's exit file, ContainerStatus and
// ListContainers both report it exited with its code, also while the kubelet-style listing every
// second only looks at the monitor in /proc now and then.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ContainerConfig, ContainerState } from '../../proto/gen/runtime/v1/api.ts';
import { CONMON_PIDFILE } from '../../node/skiffd/oci/conmon.ts';
import { needs } from '../support/prereq.ts';
import { startRuncContainers } from '../support/runc-containers.ts';
import { until } from '../support/wait.ts';

test('containers: status and listing are exact right after an exit', { timeout: 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const { manager: m, pod, state } = await startRuncContainers(t);

  // Exits when the test removes its file: the test decides the moment.
  const id = await m.create({
    podSandboxId: pod.id,
    config: ContainerConfig.fromPartial({
      metadata: { name: 'exits', attempt: 0 },
      image: { image: 'busybox' },
      command: ['sh', '-c', 'touch /tmp/hold; while [ -e /tmp/hold ]; do sleep 0.05; done; exit 7'],
      logPath: 'exits/0.log',
    }),
    sandboxConfig: undefined,
  });
  await m.start(id);
  // Listed (and its monitor looked at) while it runs, as the kubelet's relist does every second.
  await until('the container to run', async () => (await m.list()).find((v) => v.record.id === id && v.state === ContainerState.CONTAINER_RUNNING));
  const exitFile = join(state, 'exits', id);
  assert.ok(!existsSync(exitFile));

  const removed = await m.execSync(id, ['rm', '/tmp/hold'], 30);
  assert.equal(removed.exitCode, 0, `rm /tmp/hold in the container: ${removed.stderr.toString()}`);
  // Waits for conmon's exit file without turning the event loop (Atomics.wait blocks this thread in
  // 2 ms steps, bounded), so the daemon's exit watcher has not seen it yet: the calls below must find
  // the exit themselves, as a client calling at that instant would.
  const tick = new Int32Array(new SharedArrayBuffer(4));
  const deadline = Date.now() + 20_000;
  while (!existsSync(exitFile) && Date.now() < deadline) Atomics.wait(tick, 0, 0, 2);
  if (!existsSync(exitFile)) {
    // Seen once on a loaded machine, not understood: say what the node showed rather than only that.
    const conmonPid = Number.parseInt(readFileSync(join(m.paths(id).bundle, CONMON_PIDFILE), 'utf8'), 10);
    const held = await m.execSync(id, ['ls', '/tmp/hold'], 30).then(
      (r) => `ls /tmp/hold: ${r.exitCode}`,
      (err: Error) => `exec: ${err.message}`,
    );
    assert.fail(
      `conmon wrote no exit file within 20 s; afterwards: exit file ${existsSync(exitFile) ? 'present' : 'absent'}, ` +
        `conmon ${conmonPid && existsSync(`/proc/${conmonPid}`) ? 'alive' : 'gone'}, state ${ContainerState[(await m.status(id)).state]}, ${held}`,
    );
  }
  const listed = (await m.list()).find((v) => v.record.id === id);
  const status = await m.status(id);
  assert.equal(listed?.state, ContainerState.CONTAINER_EXITED, 'ListContainers right after the exit');
  assert.equal(status.state, ContainerState.CONTAINER_EXITED, 'ContainerStatus right after the exit');
  assert.equal(status.record.exitCode, 7);
  assert.equal(listed?.record.exitCode, 7);
});
