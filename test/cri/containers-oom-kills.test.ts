// OOM kills from the kernel log: a container the OOM killer ended is OOMKilled even when conmon could not
// see it (under the systemd driver systemd may remove the container's cgroup before conmon reads it),
// and only the kernel's own records count: a process writing to /dev/kmsg cannot mark a container.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ContainerConfig, ContainerState } from '../../proto/gen/runtime/v1/api.ts';
import { OomKills, oomKilledContainer } from '../../node/skiffd/containers/oom-kills.ts';
import { isRoot, needs, unavailable } from '../support/prereq.ts';
import { startRuncContainers } from '../support/runc-containers.ts';
import { until } from '../support/wait.ts';
import { runCommand } from '../support/commands.ts';

/** An OOM kill as the kernel words it (Linux 4.19 and later), naming the victim's cgroup. */
const killMessage = (taskMemcg: string) =>
  `oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=${dirname(taskMemcg)},task_memcg=${taskMemcg},task=sh,pid=4242,uid=0`;

test('a kernel record names the container the OOM killer struck, under either driver; no other record does', () => {
  const [scoped, plain, nested, other] = Array.from({ length: 4 }, () => randomBytes(32).toString('hex'));
  // "PRIORITY,SEQUENCE,TIMESTAMP,FLAGS;MESSAGE": priority 3 is facility 0 (the kernel), level 3 (err).
  const kernel = (memcg: string) => `3,1234,56789,-;${killMessage(memcg)}\n`;
  assert.equal(oomKilledContainer(kernel(`/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/skiffd-${scoped}.scope`)), scoped);
  assert.equal(oomKilledContainer(kernel(`/kubepods/besteffort/pod1/skiffd-${plain}`)), plain);
  assert.equal(oomKilledContainer(kernel(`/kubepods/pod1/skiffd-${nested}/inner`)), nested, 'a cgroup the container made below its own');
  assert.equal(oomKilledContainer(kernel(`/system.slice/other-${other}.scope`)), undefined, 'not a container of ours');
  assert.equal(
    oomKilledContainer(`6,1,2,-;Memory cgroup out of memory: Killed process 4242 (sh) task_memcg=/skiffd-${plain}\n`),
    undefined,
    'not a kill record',
  );
  // The same words with a user-space priority (facility 1, LOG_USER, or any other): not the kernel's.
  for (const priority of [11, 12, 14, 30, 190]) assert.equal(oomKilledContainer(`${priority},1234,56789,-;${killMessage(`/skiffd-${plain}`)}\n`), undefined);
  assert.equal(oomKilledContainer(`;${killMessage(`/skiffd-${plain}`)}`), undefined, 'a record without a priority');
});

test("only the OOM killer's own summary counts: kernel records quoting text a container chose mark no container", () => {
  const [victim, other] = Array.from({ length: 2 }, () => randomBytes(32).toString('hex'));
  const memcg = (id: string) => `/kubepods/burstable/pod1/skiffd-${id}`;
  // Priority 5 and 3 are facility 0 (the kernel) at levels notice and err.
  const at = (priority: number, message: string) => `${priority},1234,56789,-;${message}\n`;
  // An AppArmor denial quotes the path the container tried to open.
  const denial = `audit: type=1400 audit(1700000000.123:45): apparmor="DENIED" operation="open" class="file" profile="skiffd-default" name="/tmp/oom-kill:x,task_memcg=${memcg(other)}" pid=4242 comm="sh" requested_mask="r" denied_mask="r" fsuid=0 ouid=0`;
  assert.equal(oomKilledContainer(at(5, denial)), undefined, 'an AppArmor denial naming a kill-like path');
  assert.equal(oomKilledContainer(at(5, `audit: name="/tmp/${killMessage(memcg(other))}"`)), undefined, 'a whole summary quoted inside another record');
  assert.equal(oomKilledContainer(at(3, `sh[4242]: ${killMessage(memcg(other))}`)), undefined, 'a summary in the middle of a record');
  assert.equal(oomKilledContainer(at(3, `${killMessage(memcg(other))} trailing`)), undefined, 'a summary with more after it');
  assert.equal(oomKilledContainer(at(3, `oom-kill:task_memcg=${memcg(other)}`)), undefined, 'the words without the structure');
  assert.equal(
    oomKilledContainer(at(3, `oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,task_memcg=${memcg(other)},task=sh,pid=1,uid=0`)),
    undefined,
    'neither oom_memcg nor global_oom',
  );
  assert.equal(oomKilledContainer(at(3, `x\n ${killMessage(memcg(other))}`)), undefined, 'a summary in a continuation line');
  // A container may name a cgroup below its own, task_memcg included: the victim's container, not the name, counts.
  const named = `${memcg(victim)}/x,task_memcg=${memcg(other)}`;
  assert.equal(oomKilledContainer(at(3, killMessage(named))), undefined, 'task_memcg said twice (a cgroup name carrying it) cannot be read with certainty');
  assert.equal(oomKilledContainer(at(3, killMessage(`${memcg(victim)}/a,task=b,pid=1,uid=0`))), victim, 'a cgroup name carrying the tail');
  const comm = (task: string) =>
    `oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=${memcg(victim)},task_memcg=${memcg(victim)},task=${task},pid=4242,uid=0`;
  assert.equal(oomKilledContainer(at(3, comm('a,task=b,pid=1'))), victim, 'a command name carrying the tail');
  assert.equal(oomKilledContainer(at(3, comm('\\xe2\\x9c\\x93'))), victim, 'a command name the log escapes');
  // The forms the kernel writes: a global OOM, several nodes, a kernel without cpusets.
  assert.equal(
    oomKilledContainer(
      at(6, `oom-kill:constraint=CONSTRAINT_NONE,nodemask=0-1,3,cpuset=/,mems_allowed=0-1,3,global_oom,task_memcg=${memcg(victim)},task=dd,pid=7023,uid=0`),
    ),
    victim,
  );
  assert.equal(
    oomKilledContainer(
      at(6, `oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),oom_memcg=${memcg(victim)},task_memcg=${memcg(victim)},task=dd,pid=7023,uid=0`),
    ),
    victim,
  );
  assert.equal(
    oomKilledContainer(
      at(
        6,
        `oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=skiffd-${victim},mems_allowed=0,oom_memcg=/kubepods/burstable/pod1,task_memcg=${memcg(victim)},task=dd,pid=7023,uid=0`,
      ),
    ),
    victim,
    'a pod-level kill, the cpuset named after the container',
  );
});

test("a genuine kill in a cgroup named after a container, outside the container's own, does not mark it", (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skiffd-oom-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const id = randomBytes(32).toString('hex');
  const own = `/kubepods/besteffort/pod1/skiffd-${id}`;
  // The kernel's own record (facility 0) of one kill: each log holds one, as /dev/kmsg returns one a read.
  const struck = (taskMemcg: string, cgroupPath = own) => {
    const file = join(dir, randomBytes(4).toString('hex'));
    writeFileSync(file, `3,1234,56789,-;${killMessage(taskMemcg)}\n`);
    const kills = new OomKills(file);
    assert.ok(kills.open());
    try {
      return kills.struck(id, cgroupPath);
    } finally {
      kills.close();
    }
  };
  // A local user's `systemd-run --user --scope --unit=skiffd-<id>` with a tiny MemoryMax, for real.
  assert.equal(struck(`/user.slice/user-1000.slice/user@1000.service/skiffd-${id}.scope`), false, "a user's scope");
  assert.equal(struck(`/user.slice/user-1000.slice/user@1000.service/skiffd-${id}.scope`, `/kubepods.slice/kubepods-pod1.slice/skiffd-${id}.scope`), false);
  assert.equal(struck(own, own.slice(0, -1)), false, 'a cgroup whose name only starts with the path');
  assert.equal(struck(`/elsewhere${own}`), false, "the container's path below another cgroup");
  assert.equal(struck(own), true, 'the container cgroup itself');
  assert.equal(struck(`${own}/inner`), true, 'a cgroup the container made below its own');
  assert.equal(
    struck(`/kubepods.slice/kubepods-pod1.slice/skiffd-${id}.scope`, `/kubepods.slice/kubepods-pod1.slice/skiffd-${id}.scope`),
    true,
    'systemd driver',
  );
  assert.equal(struck(own, ''), false, 'a container without a cgroup path');
});

test('the kernel log: a record a process writes to /dev/kmsg, worded as a kill, marks no container', (t) => {
  if (!isRoot || !existsSync('/dev/kmsg')) return unavailable(t, 'writing the kernel log (/dev/kmsg) needs root');
  const kills = new OomKills();
  assert.ok(kills.open(), '/dev/kmsg opens');
  t.after(() => kills.close());
  const forged = randomBytes(32).toString('hex');
  // Even root, even with a priority that claims the kernel's facility: the kernel makes it LOG_USER.
  writeFileSync('/dev/kmsg', `${killMessage(`/kubepods/besteffort/pod1/skiffd-${forged}`)}\n`);
  writeFileSync('/dev/kmsg', `<3>${killMessage(`/kubepods/besteffort/pod1/skiffd-${forged}`)}\n`);
  assert.equal(kills.struck(forged, `/kubepods/besteffort/pod1/skiffd-${forged}`), false);
});

const EAT = 'a=x; while :; do a=$a$a; done';
const eater = (name: string, script = EAT) =>
  ContainerConfig.fromPartial({
    metadata: { name, attempt: 0 },
    image: { image: 'busybox' },
    command: ['sh', '-c', script],
    linux: { resources: { memoryLimitInBytes: BigInt(16 << 20), memorySwapLimitInBytes: BigInt(16 << 20) } },
  });

test('an OOM kill conmon did not record is read from the kernel log: OOMKilled, and still after a restart', { timeout: 180_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const containers = await startRuncContainers(t);
  const { pod, state } = containers;
  // It eats only once told to (a file appears), so the daemon can be down by then.
  const id = await containers.manager.create({
    podSandboxId: pod.id,
    config: eater('eater', `while [ ! -e /tmp/go ]; do sleep 0.1; done; ${EAT}`),
    sandboxConfig: undefined,
  });
  await containers.manager.start(id);
  await until('the container to run', async () => (await containers.manager.status(id)).state === ContainerState.CONTAINER_RUNNING);
  // The daemon is down while the container dies: nothing but conmon sees the end.
  await containers.manager.close();
  const told = await runCommand('runc', ['--root', join(state, 'runc'), 'exec', id, 'touch', '/tmp/go'], { timeoutMs: 30_000 });
  assert.equal(told.code, 0, told.stderr);
  const root = join(state, '..', 'root');
  const oomFlag = join(root, 'containers', id, 'persist', 'oom');
  const exitFile = join(state, 'exits', id);
  await until("conmon's exit file", () => existsSync(exitFile), 60_000);
  // What conmon leaves when it loses the race with the cgroup's removal: the exit, and no OOM flag.
  assert.ok(existsSync(oomFlag), `conmon recorded the kill at ${oomFlag} (where this test takes it away)`);
  rmSync(oomFlag);
  let m = await containers.reopen();
  const first = await m.status(id);
  assert.deepEqual([first.state, first.record.exitCode, first.record.reason], [ContainerState.CONTAINER_EXITED, 137, 'OOMKilled']);
  m = await containers.reopen();
  const again = await m.status(id);
  assert.deepEqual([again.record.exitCode, again.record.reason], [137, 'OOMKilled'], 'the same answer after a second restart');
});

test('a container killed by a signal, with a forged kill record for its cgroup, is an Error', { timeout: 120_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const { manager: m, pod, cgroupParent } = await startRuncContainers(t);
  const id = await m.create({
    podSandboxId: pod.id,
    config: ContainerConfig.fromPartial({ metadata: { name: 'killed', attempt: 0 }, image: { image: 'busybox' }, command: ['sleep', '3600'] }),
    sandboxConfig: undefined,
  });
  writeFileSync('/dev/kmsg', `<3>${killMessage(`${cgroupParent}/skiffd-${id}`)}\n`);
  await m.start(id);
  await until('the container to run', async () => (await m.status(id)).state === ContainerState.CONTAINER_RUNNING);
  // No grace period: SIGKILL at once, as the OOM killer would send it.
  await m.stop(id, 0);
  const status = await m.status(id);
  assert.deepEqual([status.record.exitCode, status.record.reason], [137, 'Error']);
});

test("a real OOM kill is in the kernel's log as the reader expects it", { timeout: 120_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const { manager: m, pod, cgroupParent } = await startRuncContainers(t);
  const id = await m.create({ podSandboxId: pod.id, config: eater('eater'), sandboxConfig: undefined });
  const kills = new OomKills();
  assert.ok(kills.open(), '/dev/kmsg opens');
  t.after(() => kills.close());
  await m.start(id);
  await until('the container to be killed', async () => (await m.status(id)).state === ContainerState.CONTAINER_EXITED, 60_000);
  const status = await m.status(id);
  assert.deepEqual([status.record.exitCode, status.record.reason], [137, 'OOMKilled']);
  // The kernel's own words, read by the same reader the daemon uses when conmon saw nothing.
  assert.equal(kills.struck(id, `${cgroupParent}/skiffd-${id}`), true, 'the kill is in the kernel log with the container cgroup');
});
