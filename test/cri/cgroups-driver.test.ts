// The cgroup drivers as pure functions: which parents each accepts (with a message naming the setting
// to change), where pods and containers go, the unit properties for pod limits, and the start-up
// refusal of the systemd driver on a host that systemd did not boot. The drivers at work, with systemd
// as PID 1 on cgroup v2, are tested in the guest (test/guest/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cgroupDriver, cgroupfsDriver, systemdDriver, unitProperties } from '../../node/skiffd/cgroups/driver.ts';
import { parseCgroupLayout } from '../../node/skiffd/cgroups/layout.ts';
import { writeLimits } from '../../node/skiffd/cgroups/limits.ts';
import { parseConfig } from '../../node/skiffd/config.ts';

const podId = 'f'.repeat(12) + '0'.repeat(52);
const cid = 'c'.repeat(64);

test('cgroupfs driver: paths as given, its own pod cgroups under /skiffd, a systemd slice refused with what to set', () => {
  assert.deepEqual(cgroupfsDriver.podCgroup('', podId), { path: '/skiffd/pod-ffffffffffff', owned: true });
  assert.deepEqual(cgroupfsDriver.podCgroup('/kubepods/burstable/pod1', podId), { path: '/kubepods/burstable/pod1', owned: false });
  assert.equal(cgroupfsDriver.containerCgroupsPath('/kubepods/burstable/pod1', cid), `/kubepods/burstable/pod1/skiffd-${cid}`);
  assert.equal(cgroupfsDriver.containerCgroupPath('/kubepods/burstable/pod1', cid), `/kubepods/burstable/pod1/skiffd-${cid}`);
  assert.equal(cgroupfsDriver.rejectParent('/kubepods/burstable/pod1'), undefined);
  assert.match(cgroupfsDriver.rejectParent('kubepods-burstable-pod1.slice') ?? '', /systemd slice.*cgroup_driver = "systemd"/);
  assert.deepEqual(cgroupfsDriver.runtimeFlags, []);
});

test("systemd driver: the kubelet's slices expanded as systemd nests them, containers as scopes, cgroupfs paths refused", () => {
  const slice = 'kubepods-burstable-pod12345678_1234_1234_1234_123456789012.slice';
  const path = `/kubepods.slice/kubepods-burstable.slice/${slice}`;
  assert.deepEqual(systemdDriver.podCgroup(slice, podId), { path, owned: false });
  assert.deepEqual(systemdDriver.podCgroup('', podId), { path: '/skiffd.slice/skiffd-podffffffffffff.slice', owned: true });
  assert.equal(systemdDriver.containerCgroupsPath(path, cid), `${slice}:skiffd:${cid}`);
  assert.equal(systemdDriver.containerCgroupPath(path, cid), `${path}/skiffd-${cid}.scope`);
  assert.equal(systemdDriver.rejectParent(slice), undefined);
  assert.equal(systemdDriver.rejectParent(''), undefined, 'no parent: skiffd makes a slice of its own');
  // critest under the systemd driver sends a path ending in a slice; the last element names it.
  assert.equal(systemdDriver.rejectParent('/test.slice'), undefined);
  assert.deepEqual(systemdDriver.podCgroup('/test.slice', podId), { path: '/test.slice', owned: false });
  assert.deepEqual(systemdDriver.podCgroup(`/kubepods.slice/kubepods-burstable.slice/${slice}`, podId), { path, owned: false });
  assert.match(systemdDriver.rejectParent('/kubepods/burstable/pod1') ?? '', /not a systemd slice.*cgroupDriver to systemd/);
  assert.match(systemdDriver.rejectParent('a b.slice') ?? '', /not a valid systemd unit name/);
  assert.deepEqual(systemdDriver.runtimeFlags, ['--systemd-cgroup']);
  assert.throws(() => systemdDriver.containerCgroupsPath('/skiffd/pod-ffffffffffff', cid), /made under cgroup_driver = "cgroupfs"/);
});

test('pod limits as systemd unit properties: weight from shares, quota as a percentage over the same period, memory', () => {
  assert.deepEqual(unitProperties({ cpuShares: 1024, cpuQuotaUs: 50_000, cpuPeriodUs: 100_000, memoryBytes: 64 << 20 }), [
    'CPUWeight=39',
    'CPUQuota=50%',
    'CPUQuotaPeriodSec=100000us',
    `MemoryMax=${64 << 20}`,
  ]);
  assert.deepEqual(unitProperties({ cpuQuotaUs: 250_000, cpuPeriodUs: 50_000 }), ['CPUQuota=500%', 'CPUQuotaPeriodSec=50000us']);
  assert.deepEqual(unitProperties({ cpuQuotaUs: 100, cpuPeriodUs: 100_000 }), ['CPUQuota=1%', 'CPUQuotaPeriodSec=100000us'], 'never 0%, which systemd rejects');
  assert.deepEqual(unitProperties({}), []);
});

test('the systemd driver is refused at start-up where systemd is not PID 1, naming both settings to change', () => {
  assert.equal(
    cgroupDriver('cgroupfs', () => false),
    cgroupfsDriver,
  );
  assert.equal(
    cgroupDriver('systemd', () => true),
    systemdDriver,
  );
  assert.throws(
    () => cgroupDriver('systemd', () => false),
    /cgroup_driver = "systemd" needs systemd as PID 1.*cgroup_driver = "cgroupfs".*cgroupDriver: cgroupfs/,
  );
});

test('cgroup_driver = "auto" (the default) is systemd where systemd is PID 1 and cgroupfs elsewhere', () => {
  assert.equal(
    cgroupDriver('auto', () => true),
    systemdDriver,
  );
  assert.equal(
    cgroupDriver('auto', () => false),
    cgroupfsDriver,
  );
  assert.equal(parseConfig('').runtime.cgroupDriver, 'auto');
  assert.throws(() => parseConfig('[runtime]\ncgroup_driver = "systemd-ish"\n'), /runtime\.cgroup_driver.*one of auto, cgroupfs, systemd/);
});

test('pod limits under cgroupfs: cpu.weight, cpu.max and memory.max on v2; cpu.shares, the CFS pair and limit_in_bytes on v1', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-cglimits-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const limits = { cpuShares: 1024, cpuQuotaUs: 50_000, cpuPeriodUs: 100_000, memoryBytes: 64 << 20 };

  mkdirSync(join(dir, 'v2'));
  const v2 = parseCgroupLayout(`30 23 0:26 / ${join(dir, 'v2')} rw - cgroup2 cgroup2 rw\n`, () => 'cpu memory pids');
  await writeLimits('/kubepods/pod1', limits, v2);
  const v2file = (f: string) => readFileSync(join(dir, 'v2', 'kubepods', 'pod1', f), 'utf8');
  // The kubelet's and runc's conversion: 1 + (1024 - 2) * 9999 / 262142, in integers.
  assert.deepEqual([v2file('cpu.weight'), v2file('cpu.max'), v2file('memory.max')], ['39', '50000 100000', String(64 << 20)]);

  for (const c of ['cpu', 'memory']) mkdirSync(join(dir, 'v1', c), { recursive: true });
  const mount = (c: string, i: number) => `3${i} 31 0:2${i} / ${join(dir, 'v1', c)} rw - cgroup cgroup rw,${c}\n`;
  const v1 = parseCgroupLayout(['cpu', 'memory'].map(mount).join(''), () => '');
  await writeLimits('/kubepods/pod1', { ...limits, cpuQuotaUs: undefined }, v1);
  const v1file = (c: string, f: string) => readFileSync(join(dir, 'v1', c, 'kubepods', 'pod1', f), 'utf8');
  assert.deepEqual(
    [v1file('cpu', 'cpu.shares'), v1file('cpu', 'cpu.cfs_period_us'), v1file('cpu', 'cpu.cfs_quota_us'), v1file('memory', 'memory.limit_in_bytes')],
    ['1024', '100000', '-1', String(64 << 20)],
    'no quota is -1 on v1 (max on v2)',
  );
  await assert.rejects(
    writeLimits(
      '/kubepods/pod1',
      { memoryBytes: 1 },
      parseCgroupLayout(mount('cpu', 0), () => ''),
    ),
    /no memory cgroup controller/,
  );
});

test('a container cgroup named in an OCI spec is found in the hierarchy: paths as they are, runc systemd form as its scope', () => {
  assert.equal(cgroupfsDriver.cgroupPathOfSpec('/skiffd/pod-1/abc'), '/skiffd/pod-1/abc');
  assert.equal(cgroupfsDriver.cgroupPathOfSpec('skiffd/pod-1/abc'), '/skiffd/pod-1/abc');
  assert.equal(
    systemdDriver.cgroupPathOfSpec('kubepods-burstable-pod1.slice:skiffd:abc'),
    '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/skiffd-abc.scope',
  );
  assert.equal(systemdDriver.cgroupPathOfSpec(':cri:abc'), '/system.slice/cri-abc.scope');
  assert.equal(systemdDriver.cgroupPathOfSpec('-.slice:p:abc'), '/p-abc.scope');
  assert.equal(systemdDriver.cgroupPathOfSpec('/skiffd/pod-1/abc'), '/skiffd/pod-1/abc');
  // The inverse of what each driver writes into the spec.
  for (const [driver, pod] of [
    [cgroupfsDriver, '/kubepods/burstable/pod1'],
    [cgroupfsDriver, '/'],
    [systemdDriver, '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice'],
    [systemdDriver, '/'],
  ] as const) {
    assert.equal(driver.cgroupPathOfSpec(driver.containerCgroupsPath(pod, cid)), driver.containerCgroupPath(pod, cid), `${driver.name} ${pod}`);
  }
});
