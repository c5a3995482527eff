// PodSandboxStats CPU, memory and process count, read from the pod's cgroup parent on whatever cgroup
// layout this host has (v1, v2 or hybrid): a busy process is started inside a test cgroup that the pod
// names as its cgroup_parent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, rmdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { cgroupLayout, cgroupfsPath, controllerDir, hasController, parseCgroupLayout } from '../../node/skiffd/cgroups/layout.ts';
import { readCpu, readCpuSpec, readMemory, readProcessCount, readTasks } from '../../node/skiffd/cgroups/stats.ts';
import { parseNetDev, podNetDev } from '../../node/skiffd/pods/stats.ts';
import type { PodEntry } from '../../node/skiffd/pods/record-file.ts';
import { needs } from '../support/prereq.ts';
import { startSkiffd } from '../support/skiffd.ts';
import { createTestNetwork, skiffdNetworkConfig } from '../support/netns.ts';
import { podConfig } from '../support/pods.ts';
import { until } from '../support/wait.ts';

test('cgroupfsPath expands systemd slice names', () => {
  assert.equal(cgroupfsPath('kubepods-burstable-pod1234.slice'), '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234.slice');
  assert.equal(cgroupfsPath('/kubepods/burstable/pod1234'), '/kubepods/burstable/pod1234');
  assert.equal(cgroupfsPath('kubepods'), '/kubepods');
});

const MOUNTS = {
  v2: '30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n',
  v1:
    '32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n' +
    '35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n' +
    '40 31 0:37 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd\n',
  hybrid: '35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n' + '41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n',
};

test('cgroup layout: v1, v2 and hybrid mounts', () => {
  const v2 = parseCgroupLayout(MOUNTS.v2, () => 'cpu memory pids');
  assert.equal(v2.mode, 'v2');
  assert.equal(controllerDir('memory', '/kubepods/pod1', v2), '/sys/fs/cgroup/kubepods/pod1');
  const v1 = parseCgroupLayout(MOUNTS.v1, () => '');
  assert.equal(v1.mode, 'v1');
  assert.equal(controllerDir('cpuacct', '/kubepods/pod1', v1), '/sys/fs/cgroup/cpu,cpuacct/kubepods/pod1');
  assert.equal(controllerDir('pids', '/kubepods/pod1', v1), undefined);
  const hybrid = parseCgroupLayout(MOUNTS.hybrid, () => '');
  assert.equal(hybrid.mode, 'hybrid');
  assert.equal(controllerDir('memory', '/p', hybrid), '/sys/fs/cgroup/memory/p');
  // hugetlb: a v1 hierarchy of its own, or enabled in the unified tree; a hybrid host's empty v2 tree has none.
  assert.equal(hasController('hugetlb', v1), false);
  assert.equal(
    hasController(
      'hugetlb',
      parseCgroupLayout(`${MOUNTS.v1}44 31 0:40 / /sys/fs/cgroup/hugetlb rw - cgroup cgroup rw,hugetlb\n`, () => ''),
    ),
    true,
  );
  assert.equal(hasController('hugetlb', v2), false);
  assert.equal(
    hasController(
      'hugetlb',
      parseCgroupLayout(MOUNTS.v2, () => 'cpu memory hugetlb pids'),
    ),
    true,
  );
  assert.equal(
    hasController(
      'hugetlb',
      parseCgroupLayout(MOUNTS.hybrid, () => 'hugetlb'),
    ),
    false,
  );
  assert.equal(hasController('memory', hybrid), true);
});

test('cgroup v2 and v1 stat files are read the same way', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-cgfiles-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const v2dir = join(dir, 'v2', 'pod');
  mkdirSync(v2dir, { recursive: true });
  writeFileSync(join(v2dir, 'cpu.stat'), 'usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_periods 40\nnr_throttled 9\nthrottled_usec 2000\n');
  writeFileSync(join(v2dir, 'memory.current'), '10000\n');
  writeFileSync(
    join(v2dir, 'memory.stat'),
    'anon 4000\nfile 6000\nkernel 800\nfile_mapped 700\nactive_file 1200\ninactive_file 2500\npgfault 7\npgmajfault 1\n',
  );
  writeFileSync(join(v2dir, 'memory.min'), '4096\n');
  writeFileSync(join(v2dir, 'cpu.weight'), '79\n');
  writeFileSync(join(v2dir, 'cpu.max'), '50000 100000\n');
  writeFileSync(join(v2dir, 'memory.max'), 'max\n');
  writeFileSync(join(v2dir, 'memory.events'), 'low 0\nhigh 0\nmax 4\noom 2\noom_kill 1\n');
  writeFileSync(join(v2dir, 'memory.swap.current'), '300\n');
  writeFileSync(join(v2dir, 'memory.swap.max'), '1048576\n');
  writeFileSync(join(v2dir, 'pids.current'), '3\n');
  writeFileSync(join(v2dir, 'pids.max'), 'max\n');
  writeFileSync(join(v2dir, 'cgroup.procs'), '100\n101\n');
  const v2 = parseCgroupLayout(`30 23 0:26 / ${join(dir, 'v2')} rw - cgroup2 cgroup2 rw\n`, () => 'cpu memory pids');
  assert.deepEqual(await readCpu('/pod', v2), {
    usageNs: 1_500_000n,
    userNs: 1_000_000n,
    systemNs: 500_000n,
    throttling: { periods: 40n, throttledPeriods: 9n, throttledNs: 2_000_000n },
  });
  assert.deepEqual(await readMemory('/pod', v2), {
    usageBytes: 10000n,
    workingSetBytes: 7500n,
    rssBytes: 4000n,
    pageFaults: 7n,
    majorPageFaults: 1n,
    limitBytes: undefined,
    cacheBytes: 6000n,
    mappedFileBytes: 700n,
    swapBytes: 300n,
    swapLimitBytes: 1_048_576n,
    maxUsageBytes: undefined,
    failcnt: 4n,
    oomKills: 1n,
    kernelBytes: 800n,
    activeFileBytes: 1200n,
    inactiveFileBytes: 2500n,
    reservationBytes: 4096n,
  });
  // cpu.weight 79 is what runc writes for 2048 shares; cAdvisor's conversion back gives 2046.
  assert.deepEqual(await readCpuSpec('/pod', v2), { shares: 2046n, periodUs: 100_000n, quotaUs: 50_000n });
  assert.equal(await readProcessCount('/pod', v2), 3n);
  assert.deepEqual(await readTasks('/pod', v2), { processes: 2n, threads: 3n, threadsMax: undefined });

  // cpu and cpuacct mounted apart, as on hybrid hosts.
  const v1dir = join(dir, 'v1');
  for (const c of ['cpu', 'cpuacct', 'memory', 'pids']) mkdirSync(join(v1dir, c, 'pod'), { recursive: true });
  writeFileSync(join(v1dir, 'cpuacct', 'pod', 'cpuacct.usage'), '42000\n');
  writeFileSync(join(v1dir, 'cpuacct', 'pod', 'cpuacct.usage_user'), '30000\n');
  writeFileSync(join(v1dir, 'cpuacct', 'pod', 'cpuacct.usage_sys'), '12000\n');
  writeFileSync(join(v1dir, 'cpu', 'pod', 'cpu.stat'), 'nr_periods 10\nnr_throttled 2\nthrottled_time 5000\n');
  writeFileSync(join(v1dir, 'memory', 'pod', 'memory.usage_in_bytes'), '9000\n');
  writeFileSync(
    join(v1dir, 'memory', 'pod', 'memory.stat'),
    'rss 1\ntotal_rss 3000\ntotal_cache 5000\ntotal_mapped_file 600\ntotal_swap 100\ntotal_active_file 900\ntotal_inactive_file 1000\ntotal_pgfault 5\ntotal_pgmajfault 2\n',
  );
  writeFileSync(join(v1dir, 'memory', 'pod', 'memory.kmem.usage_in_bytes'), '700\n');
  // Unlimited: no reservation.
  writeFileSync(join(v1dir, 'memory', 'pod', 'memory.soft_limit_in_bytes'), '9223372036854771712\n');
  writeFileSync(join(v1dir, 'cpu', 'pod', 'cpu.shares'), '512\n');
  writeFileSync(join(v1dir, 'cpu', 'pod', 'cpu.cfs_period_us'), '100000\n');
  writeFileSync(join(v1dir, 'cpu', 'pod', 'cpu.cfs_quota_us'), '-1\n');
  writeFileSync(join(v1dir, 'memory', 'pod', 'memory.limit_in_bytes'), '2000000\n');
  writeFileSync(join(v1dir, 'memory', 'pod', 'memory.failcnt'), '6\n');
  writeFileSync(join(v1dir, 'memory', 'pod', 'memory.max_usage_in_bytes'), '12000\n');
  writeFileSync(join(v1dir, 'memory', 'pod', 'memory.oom_control'), 'oom_kill_disable 0\nunder_oom 0\noom_kill 3\n');
  // v1's "unlimited", page-aligned.
  writeFileSync(join(v1dir, 'memory', 'pod', 'memory.memsw.limit_in_bytes'), '9223372036854771712\n');
  writeFileSync(join(v1dir, 'pids', 'pod', 'pids.current'), '4\n');
  writeFileSync(join(v1dir, 'pids', 'pod', 'pids.max'), '1024\n');
  writeFileSync(join(v1dir, 'pids', 'pod', 'cgroup.procs'), '7\n');
  const mount = (c: string, i: number) => `3${i} 31 0:2${i} / ${join(v1dir, c)} rw - cgroup cgroup rw,${c}\n`;
  const v1 = parseCgroupLayout(['cpu', 'cpuacct', 'memory', 'pids'].map(mount).join(''), () => '');
  assert.deepEqual(await readCpu('/pod', v1), {
    usageNs: 42000n,
    userNs: 30000n,
    systemNs: 12000n,
    throttling: { periods: 10n, throttledPeriods: 2n, throttledNs: 5000n },
  });
  assert.deepEqual(await readMemory('/pod', v1), {
    usageBytes: 9000n,
    workingSetBytes: 8000n,
    rssBytes: 3000n,
    pageFaults: 5n,
    majorPageFaults: 2n,
    limitBytes: 2000000n,
    cacheBytes: 5000n,
    mappedFileBytes: 600n,
    swapBytes: 100n,
    swapLimitBytes: undefined,
    maxUsageBytes: 12000n,
    failcnt: 6n,
    oomKills: 3n,
    kernelBytes: 700n,
    activeFileBytes: 900n,
    inactiveFileBytes: 1000n,
    reservationBytes: undefined,
  });
  assert.deepEqual(await readCpuSpec('/pod', v1), { shares: 512n, periodUs: 100_000n, quotaUs: undefined });
  assert.deepEqual(await readTasks('/pod', v1), { processes: 1n, threads: 4n, threadsMax: 1024n });

  // An older kernel: user and system time only as USER_HZ ticks in cpuacct.stat; no pids hierarchy.
  const oldDir = join(dir, 'old');
  mkdirSync(join(oldDir, 'cpuacct', 'pod'), { recursive: true });
  writeFileSync(join(oldDir, 'cpuacct', 'pod', 'cpuacct.usage'), '42000\n');
  writeFileSync(join(oldDir, 'cpuacct', 'pod', 'cpuacct.stat'), 'user 3\nsystem 1\n');
  const old = parseCgroupLayout(`32 31 0:29 / ${join(oldDir, 'cpuacct')} rw - cgroup cgroup rw,cpuacct\n`, () => '');
  assert.deepEqual(await readCpu('/pod', old), { usageNs: 42000n, userNs: 30_000_000n, systemNs: 10_000_000n });
  assert.equal(await readProcessCount('/pod', old), undefined, 'no pids hierarchy');
  assert.equal(await readCpu('/missing', old), undefined, 'a cgroup that does not exist has no stats');
});

test('PodSandboxStats reads CPU, memory and processes from the pod cgroup', { timeout: 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['unshare', 'nsenter', 'busybox'] })) return;
  const layout = cgroupLayout();
  t.diagnostic(`cgroup layout: ${layout.mode}`);
  const dir = mkdtempSync(join(tmpdir(), 'skiff-pods-stats-'));
  const net = createTestNetwork(dir);
  const cgroup = `/skiff-test-${randomBytes(4).toString('hex')}`;
  // Only the controllers stats read (cpuset, for one, refuses tasks until it is configured).
  const dirs = [...new Set(['cpu', 'cpuacct', 'memory', 'pids'].map((c) => controllerDir(c, cgroup, layout)).filter((d): d is string => !!d))];
  for (const d of dirs) mkdirSync(d, { recursive: true });
  // The busy loop joins the cgroup before it execs, so its memory is charged there.
  const join_ = dirs.map((d) => `echo $$ > ${d}/cgroup.procs`).join(' && ');
  const busy = spawn('sh', ['-c', `${join_} && exec busybox sh -c 'x=; while :; do x=$x.; [ \${#x} -gt 100000 ] && x=; done'`], { stdio: 'ignore' });
  const d = await startSkiffd({ config: skiffdNetworkConfig(net) });
  let podSandboxId = '';
  t.after(async () => {
    if (podSandboxId) await d.runtime.removePodSandbox({ podSandboxId }).catch(() => {});
    busy.kill('SIGKILL');
    await new Promise((r) => (busy.exitCode !== null || busy.signalCode !== null ? r(null) : busy.once('exit', r)));
    await d.cleanup();
    await net.cleanup();
    for (const c of dirs) {
      try {
        rmdirSync(c);
      } catch {
        /* already gone */
      }
    }
    rmSync(dir, { recursive: true, force: true });
  });

  ({ podSandboxId } = await d.runtime.runPodSandbox({ config: podConfig('stats-cg', { cgroupParent: cgroup }) }));
  const procs = readFileSync(join(dirs[0], 'cgroup.procs'), 'utf8').trim();
  assert.equal(procs, String(busy.pid), 'the busy process is in the test cgroup');
  // Samples until the busy loop got CPU time between two of them: on a loaded machine how much it
  // gets in a given while is not ours to say, only that the rate is computed from the two readings.
  const sample = async () => (await d.runtime.podSandboxStats({ podSandboxId })).stats!.linux!;
  let first = await sample();
  const second = await until('CPU time to grow between two samples', async () => {
    const next = await sample();
    if (next.cpu!.usageCoreNanoSeconds!.value > first.cpu!.usageCoreNanoSeconds!.value) return next;
    first = next;
    return undefined;
  });

  const usage = (s: typeof first) => s.cpu!.usageCoreNanoSeconds!.value;
  const at = (s: typeof first) => s.cpu!.timestamp;
  assert.ok(usage(first) > 0n);
  const nanoCores = second.cpu!.usageNanoCores!.value;
  assert.equal(
    nanoCores,
    ((usage(second) - usage(first)) * 1_000_000_000n) / (at(second) - at(first)),
    'usage_nano_cores is the rate between the two readings',
  );
  assert.ok(nanoCores > 0n && nanoCores < 2_000_000_000n, `one busy loop uses at most about one core: ${nanoCores} nanocores`);
  assert.ok(second.memory!.usageBytes!.value > 0n, 'memory is charged to the cgroup');
  assert.ok(second.memory!.workingSetBytes!.value > 0n);
  assert.ok(second.memory!.workingSetBytes!.value <= second.memory!.usageBytes!.value);
  if (layout.mode === 'v2' || layout.v1.has('pids')) assert.equal(second.process!.processCount!.value, 1n);
  assert.equal(second.network!.defaultInterface!.name, 'eth0');
  assert.ok(
    second.network!.interfaces.some((i) => i.name === 'eth0'),
    'the default interface is in the list too, as cAdvisor lists it',
  );
});

test('pod network counters are read through a process in the pod, checked to be in its namespace', { timeout: 30_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['unshare', 'sleep'] })) return;
  const layout = cgroupLayout();
  const cgroup = `/skiff-test-${randomBytes(4).toString('hex')}`;
  const parentDirs = [...new Set(['pids', 'memory', 'cpuacct'].map((c) => controllerDir(c, cgroup, layout)).filter((d): d is string => !!d))];
  const childDirs = parentDirs.map((d) => join(d, 'container'));
  for (const d of childDirs) mkdirSync(d, { recursive: true });
  // A "container" in a network namespace of its own (only lo in it), in a child of the pod's cgroup.
  const enter = childDirs.map((d) => `echo $$ > ${d}/cgroup.procs`).join(' && ');
  const inPod = spawn('sh', ['-c', `${enter} && exec unshare -n sleep 60`], { stdio: 'ignore' });
  const host = spawn('sleep', ['60'], { stdio: 'ignore' });
  const savedPath = process.env.PATH;
  t.after(async () => {
    process.env.PATH = savedPath;
    for (const p of [inPod, host]) p.kill('SIGKILL');
    await Promise.all([inPod, host].map((p) => new Promise((r) => (p.exitCode !== null || p.signalCode !== null ? r(null) : p.once('exit', r)))));
    for (const d of [...childDirs, ...parentDirs]) {
      try {
        rmdirSync(d);
      } catch {
        /* already gone */
      }
    }
  });
  // unshare execs sleep in the new namespace: wait until the pid's namespace is no longer ours.
  const hostNs = statSync('/proc/self/ns/net').ino;
  await until('the process to be in a network namespace of its own', () => statSync(`/proc/${inPod.pid}/ns/net`).ino !== hostNs);
  // With no nsenter to fall back on, only the direct read can answer.
  process.env.PATH = '/nonexistent';
  const pod = (net: string) => ({ cgroupParent: cgroup, namespaces: { net }, internals: {} }) as unknown as PodEntry;

  const text = await podNetDev(pod(`/proc/${inPod.pid}/ns/net`));
  assert.ok(text, 'read without entering the namespace');
  assert.deepEqual(
    parseNetDev(text).map((c) => c.name),
    ['lo'],
    "the pod's namespace, not the host's",
  );
  // A process of the cgroup that is not in the pod's namespace is not taken for it.
  assert.equal(await podNetDev(pod(`/proc/${host.pid}/ns/net`)), undefined);
});
