// Pressure stall information and block I/O counters of a cgroup: the parsers on text the kernel wrote,
// the readers on cgroups of this host's kernel with real load in them, and their CRI form.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { criIo, criPsi, criSwap } from '../../node/skiffd/cgroups/cri-usage.ts';
import { blockDeviceName, parseBlkio, parseIoStat, readIo } from '../../node/skiffd/cgroups/io.ts';
import { cgroupLayout, controllerDir, parseCgroupLayout } from '../../node/skiffd/cgroups/layout.ts';
import { parsePressure, readPressure } from '../../node/skiffd/cgroups/pressure.ts';
import type { CgroupMemory } from '../../node/skiffd/cgroups/stats.ts';
import { needs, unavailable } from '../support/prereq.ts';
import { until } from '../support/wait.ts';

// Read from this host's kernel (6.18): a cgroup with three busy loops on two CPUs for four seconds, and
// a v1 blkio cgroup after 1 MiB written and read back with O_DIRECT.
const CPU_PRESSURE = 'some avg10=25.58 avg60=5.04 avg300=1.06 total=3198298\nfull avg10=21.61 avg60=4.24 avg300=0.89 total=2681275\n';
const BLKIO_BYTES = '254:0 Read 1048576\n254:0 Write 1048576\n254:0 Sync 2097152\n254:0 Async 0\n254:0 Discard 0\n254:0 Total 2097152\nTotal 2097152\n';
const BLKIO_OPS = '254:0 Read 16\n254:0 Write 16\n254:0 Sync 32\n254:0 Async 0\n254:0 Discard 0\n254:0 Total 32\nTotal 32\n';
// io.stat as Documentation/admin-guide/cgroup-v2.rst shows it, plus a device with discards.
const IO_STAT =
  '8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0\n8:0 rbytes=90430464 wbytes=299008000 rios=8950 wios=1252 dbytes=50331648 dios=3021\n';

test('pressure files: some and full lines, totals in microseconds', () => {
  assert.deepEqual(parsePressure(CPU_PRESSURE), {
    some: { avg10: 25.58, avg60: 5.04, avg300: 1.06, totalUs: 3_198_298n },
    full: { avg10: 21.61, avg60: 4.24, avg300: 0.89, totalUs: 2_681_275n },
  });
  // Before Linux 5.13 cpu.pressure had no full line.
  assert.deepEqual(parsePressure('some avg10=0.50 avg60=0.10 avg300=0.02 total=1234\n'), {
    some: { avg10: 0.5, avg60: 0.1, avg300: 0.02, totalUs: 1234n },
  });
  assert.equal(parsePressure(''), undefined);
  for (const r of ['cpu', 'memory', 'io']) {
    const file = `/proc/pressure/${r}`;
    if (!existsSync(file)) continue;
    const p = parsePressure(readFileSync(file, 'utf8'));
    assert.ok(p?.some, `${file} parses`);
  }
});

test('I/O counters: cgroup v2 io.stat and v1 blkio files, per device', () => {
  assert.deepEqual(parseIoStat(IO_STAT), [
    { major: 8, minor: 16, readBytes: 1_459_200n, writeBytes: 314_773_504n, reads: 192n, writes: 353n },
    { major: 8, minor: 0, readBytes: 90_430_464n, writeBytes: 299_008_000n, reads: 8950n, writes: 1252n },
  ]);
  assert.deepEqual(parseBlkio(BLKIO_BYTES, BLKIO_OPS), [{ major: 254, minor: 0, readBytes: 1_048_576n, writeBytes: 1_048_576n, reads: 16n, writes: 16n }]);
  assert.deepEqual(parseBlkio('Total 0\n', 'Total 0\n'), [], 'a cgroup that did no I/O');
});

test('the CRI form: totals in nanoseconds, I/O usage only with pressure, swap left under a limit', () => {
  const p = parsePressure(CPU_PRESSURE);
  assert.deepEqual(criPsi(p), {
    Full: { Total: 2_681_275_000n, Avg10: 21.61, Avg60: 4.24, Avg300: 0.89 },
    Some: { Total: 3_198_298_000n, Avg10: 25.58, Avg60: 5.04, Avg300: 1.06 },
  });
  assert.equal(criPsi(undefined), undefined);
  assert.deepEqual(criIo(p, 5n), { timestamp: 5n, psi: criPsi(p) });
  assert.equal(criIo(undefined, 5n), undefined, 'no IoUsage without pressure, as containerd');
  const memory = { swapBytes: 4096n } as CgroupMemory;
  assert.deepEqual(criSwap(memory, 7n), { timestamp: 7n, swapUsageBytes: { value: 4096n } }, 'unlimited: no available bytes');
  assert.deepEqual(criSwap({ ...memory, swapLimitBytes: 1_048_576n }, 7n), {
    timestamp: 7n,
    swapUsageBytes: { value: 4096n },
    swapAvailableBytes: { value: 1_044_480n },
  });
  assert.deepEqual(criSwap({ ...memory, swapLimitBytes: 0n }, 7n).swapAvailableBytes, { value: 0n });
});

test('pressure is read on cgroup v2 only, even where a hybrid host has the files', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-psi-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'pod'));
  for (const r of ['cpu', 'memory', 'io']) writeFileSync(join(dir, 'pod', `${r}.pressure`), CPU_PRESSURE);
  const v2 = parseCgroupLayout(`30 23 0:26 / ${dir} rw - cgroup2 cgroup2 rw\n`, () => 'cpu memory io pids');
  const read = await readPressure('/pod', v2);
  assert.deepEqual(read?.cpu, parsePressure(CPU_PRESSURE));
  assert.deepEqual(read?.io, parsePressure(CPU_PRESSURE));
  assert.equal(await readPressure('/gone', v2), undefined);
  const hybrid = parseCgroupLayout(`35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n41 31 0:38 / ${dir} rw - cgroup2 cgroup2 rw\n`, () => '');
  assert.equal(hybrid.mode, 'hybrid');
  assert.equal(await readPressure('/pod', hybrid), undefined);
});

async function stop(p: ChildProcess): Promise<void> {
  p.kill('SIGKILL');
  await new Promise((r) => (p.exitCode !== null || p.signalCode !== null ? r(null) : p.once('exit', r)));
}

test('the kernel counts CPU pressure of a cgroup whose tasks outnumber the CPUs', { timeout: 120_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['busybox'] })) return;
  const host = cgroupLayout();
  if (!host.unified) return unavailable(t, 'no cgroup2 mount on this host');
  // This host's unified tree, read as a v2 host's would be (on a hybrid host it is the only tree with PSI).
  const v2 = parseCgroupLayout(`1 1 0:1 ${host.unified.root} ${host.unified.mountPoint} rw - cgroup2 cgroup2 rw\n`, () => 'cpu');
  const cgroup = `/skiff-test-psi-${randomBytes(4).toString('hex')}`;
  const dir = controllerDir('cpu', cgroup, v2)!;
  mkdirSync(dir);
  const busy: ChildProcess[] = [];
  t.after(async () => {
    for (const p of busy) await stop(p);
    rmdirSync(dir);
  });
  if (!existsSync(join(dir, 'cpu.pressure'))) return unavailable(t, 'the kernel keeps no pressure information (CONFIG_PSI, psi=1)');
  const start = await readPressure(cgroup, v2);
  assert.equal(start?.cpu?.some?.totalUs, 0n, 'a new cgroup has stalled no time');
  // One busy loop more than there are CPUs: at any instant one of them waits for a CPU.
  const cpus = Number(readFileSync('/proc/cpuinfo', 'utf8').match(/^processor\s*:/gm)?.length ?? 1);
  for (let i = 0; i < cpus + 1; i++)
    busy.push(spawn('sh', ['-c', `echo $$ > ${dir}/cgroup.procs && exec busybox sh -c 'while :; do :; done'`], { stdio: 'ignore' }));
  const loaded = await until(
    'CPU pressure to accumulate',
    async () => {
      const p = await readPressure(cgroup, v2);
      return (p?.cpu?.some?.totalUs ?? 0n) > 100_000n ? p : undefined;
    },
    60_000,
  );
  assert.ok(loaded.cpu!.some!.avg10 >= 0 && loaded.cpu!.some!.avg10 <= 100);
  assert.ok(loaded.memory?.some, 'memory pressure is there too');
  assert.ok(loaded.io?.some, 'and I/O pressure');
  t.diagnostic(`cpu some total ${loaded.cpu!.some!.totalUs} µs, avg10 ${loaded.cpu!.some!.avg10}%`);
});

test('the kernel counts block I/O of a cgroup per device, named as cAdvisor names it', { timeout: 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['busybox'] })) return;
  const layout = cgroupLayout();
  const work = mkdtempSync(join(process.env.SKIFF_TEST_DISK_DIR ?? '/var/tmp', 'skiff-io-'));
  t.after(() => rmSync(work, { recursive: true, force: true }));
  const dev = statSync(work).dev;
  const major = Math.floor(dev / 256) & 0xfff;
  const minor = (dev & 0xff) | ((dev >> 12) & 0xfff00);
  if (!existsSync(`/sys/dev/block/${major}:${minor}`)) return unavailable(t, `${work} is not on a block device`);
  const cgroup = `/skiff-test-io-${randomBytes(4).toString('hex')}`;
  const dir = controllerDir(layout.mode === 'v2' ? 'io' : 'blkio', cgroup, layout);
  if (!dir) return unavailable(t, 'no I/O controller on this host');
  mkdirSync(dir);
  t.after(() => rmdirSync(dir));
  // Linux 6.x keeps v1's blkio.throttle counters only for a device that has a throttle rule in the
  // cgroup: a limit far above what the test writes. (io.stat on v2 counts without one.)
  if (layout.mode !== 'v2') writeFileSync(join(dir, 'blkio.throttle.write_bps_device'), `${major}:${minor} 10000000000`);
  const file = join(work, 'direct');
  const dd = spawn(
    'sh',
    ['-c', `echo $$ > ${dir}/cgroup.procs && busybox dd if=/dev/zero of=${file} bs=65536 count=16 oflag=direct && busybox dd if=${file} of=/dev/null bs=65536`],
    { stdio: 'ignore' },
  );
  const code = await new Promise((r) => dd.once('exit', r));
  assert.equal(code, 0);
  const io = await readIo(cgroup, layout);
  const mine = io?.find((d) => d.major === major && d.minor === minor);
  assert.ok(mine, `the device ${major}:${minor} in ${JSON.stringify(io, (_k, v) => (typeof v === 'bigint' ? String(v) : v))}`);
  assert.ok(mine.writeBytes >= 1_048_576n, `1 MiB written with O_DIRECT: ${mine.writeBytes}`);
  assert.ok(mine.writes >= 16n, `16 writes or more: ${mine.writes}`);
  const uevent = readFileSync(`/sys/dev/block/${major}:${minor}/uevent`, 'utf8');
  assert.equal(await blockDeviceName(major, minor), `/dev/${/^DEVNAME=(.+)$/m.exec(uevent)![1]}`);
  assert.equal(await blockDeviceName(4095, 4095), '4095:4095', 'a device the kernel does not know keeps its numbers');
});
