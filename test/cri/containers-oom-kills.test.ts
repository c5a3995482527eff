// OOM kills from the kernel log: a container the OOM killer ended is OOMKilled even when conmon could not
// see it (under the systemd driver systemd may remove the container's cgroup before conmon reads it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ContainerConfig, ContainerState } from '../../proto/gen/runtime/v1/api.ts';
import { OomKills } from '../../node/skiffd/containers/oom-kills.ts';
import { isRoot, needs, unavailable } from '../support/prereq.ts';
import { startRuncContainers } from '../support/runc-containers.ts';
import { until } from '../support/wait.ts';

/** Writes a record to the kernel log, as the kernel words an OOM kill (Linux 4.19 and later). */
function logKill(taskMemcg: string): void {
  writeFileSync(
    '/dev/kmsg',
    `oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=${dirname(taskMemcg)},task_memcg=${taskMemcg},task=sh,pid=4242,uid=0\n`,
  );
}

test('the kernel log reader: kills of skiffd containers under either driver, nothing else', (t) => {
  if (!isRoot || !existsSync('/dev/kmsg')) return unavailable(t, 'writing the kernel log (/dev/kmsg) needs root');
  const kills = new OomKills();
  assert.ok(kills.open(), '/dev/kmsg opens');
  t.after(() => kills.close());
  const [scoped, plain, nested, other] = Array.from({ length: 4 }, () => randomBytes(32).toString('hex'));
  assert.equal(kills.struck(scoped), false);
  logKill(`/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/skiffd-${scoped}.scope`);
  logKill(`/kubepods/besteffort/pod1/skiffd-${plain}`);
  logKill(`/kubepods/pod1/skiffd-${nested}/inner`);
  logKill(`/system.slice/other-${other}.scope`);
  assert.equal(kills.struck(scoped), true, 'a systemd scope');
  assert.equal(kills.struck(plain), true, 'a cgroupfs path');
  assert.equal(kills.struck(nested), true, 'a cgroup the container made below its own');
  assert.equal(kills.struck(other), false, 'not a container of ours');
  kills.forget(scoped);
  assert.equal(kills.struck(scoped), false, 'forgotten once removed');
  // What the log held before it was opened counts too: a restarted daemon still knows.
  const again = new OomKills();
  again.open();
  t.after(() => again.close());
  assert.equal(again.struck(plain), true);
});

test("a real OOM kill is in the kernel's log as the reader expects it", { timeout: 120_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const { manager: m, pod } = await startRuncContainers(t);
  const id = await m.create({
    podSandboxId: pod.id,
    config: ContainerConfig.fromPartial({
      metadata: { name: 'eater', attempt: 0 },
      image: { image: 'busybox' },
      command: ['sh', '-c', 'a=x; while :; do a=$a$a; done'],
      linux: { resources: { memoryLimitInBytes: BigInt(16 << 20), memorySwapLimitInBytes: BigInt(16 << 20) } },
    }),
    sandboxConfig: undefined,
  });
  const kills = new OomKills();
  assert.ok(kills.open(), '/dev/kmsg opens');
  t.after(() => kills.close());
  await m.start(id);
  await until('the container to be killed', async () => (await m.status(id)).state === ContainerState.CONTAINER_EXITED, 60_000);
  const status = await m.status(id);
  assert.deepEqual([status.record.exitCode, status.record.reason], [137, 'OOMKilled']);
  // The kernel's own words, read by the same reader the daemon uses when conmon saw nothing.
  assert.equal(kills.struck(id), true, 'the kill is in the kernel log with the container cgroup');
});
