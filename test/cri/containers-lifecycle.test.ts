// Real containers (runc + conmon) driven through the container subsystem, against a pod record that
// uses the host's network/IPC/UTS and a busybox rootfs as the only image layer: exit codes and
// reasons, CRI logs, ExecSync, stats, resource updates, log reopen, stop timeouts, restart recovery
// after kill -9 of the process holding the subsystem, and error codes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, rmdirSync, writeFileSync, mkdirSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ServerError, Status } from 'nice-grpc-common';
import {
  ContainerConfig,
  ContainerEventType,
  ContainerState,
  LinuxContainerResources,
  NamespaceMode,
  type DeepPartial,
} from '../../proto/gen/runtime/v1/api.ts';
import { needs } from '../support/prereq.ts';
import { makeBusyboxRootfs } from '../support/rootfs.ts';
import { ContainerManager } from '../../node/skiffd/containers/manager.ts';
import { containerStats } from '../../node/skiffd/containers/cri.ts';
import { makeOciRuntime } from '../../node/skiffd/oci/index.ts';
import { execProcess } from '../../node/skiffd/oci/exec-process.ts';
import { rootfsDirs } from '../../node/skiffd/containers/rootfs.ts';
import { isMountPoint } from '../../node/skiffd/util/mount-table.ts';
import { allCgroupDirs, controllerDir } from '../../node/skiffd/cgroups/layout.ts';
import type { PodSandboxRecord } from '../../node/skiffd/pods/types.ts';
import { testPodRecord } from '../support/pods.ts';
import { until } from '../support/wait.ts';
import { runCommand } from '../support/commands.ts';

const IMAGE_ID = `sha256:${'b'.repeat(64)}`;

interface Fixture {
  dir: string;
  root: string;
  state: string;
  logDir: string;
  cgroupParent: string;
  pod: PodSandboxRecord;
  rootfsDir: string;
  open(): Promise<ContainerManager>;
  cleanup(): Promise<void>;
}

function fixture(): Fixture {
  // Short paths: conmon's attach socket path must fit in sockaddr_un.
  const dir = mkdtempSync('/tmp/skc-');
  const rootfs = makeBusyboxRootfs({ parent: dir });
  const cgroupParent = `/skiff-test-${randomBytes(4).toString('hex')}`;
  const logDir = join(dir, 'logs');
  const pod = testPodRecord({ logDirectory: logDir, cgroupParent });
  const managers: ContainerManager[] = [];
  const f: Fixture = {
    dir,
    root: join(dir, 'root'),
    state: join(dir, 'state'),
    logDir,
    cgroupParent,
    pod,
    rootfsDir: rootfs.dir,
    async open() {
      const m = new ContainerManager({
        root: f.root,
        state: f.state,
        runtime: makeOciRuntime({ root: join(f.state, 'runc') }),
        pods: { get: (id) => (id === pod.id ? pod : undefined) },
        images: {
          resolve: (name) =>
            name === 'busybox' || name === IMAGE_ID
              ? { id: IMAGE_ID, ref: `example.test/busybox@${IMAGE_ID}`, layers: [rootfs.dir], config: { cmd: ['sh'], env: ['IMAGE_ENV=1'] } }
              : undefined,
        },
      });
      await m.init();
      managers.push(m);
      return m;
    },
    async cleanup() {
      const m = managers.at(-1) ?? (await f.open());
      for (const r of await m.list()) await m.remove(r.record.id).catch(() => {});
      for (const mm of managers) await mm.close();
      // The parent cgroup is ours (runc removes each container's own); a dying task can hold it briefly.
      for (const d of allCgroupDirs(cgroupParent)) {
        for (let i = 0; existsSync(d); i++) {
          try {
            rmdirSync(d);
          } catch (err) {
            if (i >= 50) throw new Error(`cannot remove test cgroup ${d}: ${(err as Error).message}`);
            await new Promise((r) => setTimeout(r, 100));
          }
        }
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return f;
}

function config(name: string, script: string, extra: DeepPartial<ContainerConfig> = {}): ContainerConfig {
  return ContainerConfig.fromPartial({
    metadata: { name, attempt: 0 },
    image: { image: 'busybox' },
    command: ['sh', '-c', script],
    logPath: `${name}/0.log`,
    labels: { app: name, tier: 'test' },
    annotations: { 'note/x': name },
    ...extra,
  });
}

/** Whether the process has a handler for SIGTERM (bit 15 of SigCgt in /proc/PID/status). */
function catchesTerm(pid: number): boolean {
  const mask = /^SigCgt:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return mask !== undefined && (BigInt(`0x${mask}`) & (1n << 14n)) !== 0n;
}

const exited = (m: ContainerManager, id: string) =>
  until(`container ${id.slice(0, 12)} to exit`, async () => {
    const v = await m.status(id);
    return v.state === ContainerState.CONTAINER_EXITED ? v : undefined;
  });

function grpcCode(code: Status, detail?: RegExp) {
  return (err: unknown) => err instanceof ServerError && err.code === code && (!detail || detail.test(err.details));
}

interface LogLine {
  time: string;
  stream: string;
  tag: string;
  text: string;
}

function parseLog(text: string): LogLine[] {
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const m = /^(\S+) (stdout|stderr) ([FP]) (.*)$/.exec(line);
      assert.ok(m, `not a CRI log line: ${JSON.stringify(line)}`);
      return { time: m[1], stream: m[2], tag: m[3], text: m[4] };
    });
}

/**
 * The lines a log reader shows: a partial (P) piece is joined to what follows on its stream. A
 * command whose output reaches conmon in two writes (`printf x; echo`) may log either way.
 */
function fullLines(lines: LogLine[]): string[] {
  const out: string[] = [];
  const pending = new Map<string, string>();
  for (const l of lines) {
    const text = (pending.get(l.stream) ?? '') + l.text;
    if (l.tag === 'P') pending.set(l.stream, text);
    else {
      pending.delete(l.stream);
      out.push(text);
    }
  }
  return [...out, ...pending.values()];
}

test('containers: exit codes, reasons (Completed, Error, OOMKilled), CRI logs, status fields, list filters', { timeout: 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const f = fixture();
  t.after(() => f.cleanup());
  const m = await f.open();
  const ok = await m.create({
    podSandboxId: f.pod.id,
    config: config('ok', 'echo one; echo two >&2; echo "three $IMAGE_ENV"; exit 0'),
    sandboxConfig: undefined,
  });
  const bad = await m.create({ podSandboxId: f.pod.id, config: config('bad', 'exit 3'), sandboxConfig: undefined });
  // dd's 64 MiB buffer does not fit in 16 MiB: the cgroup OOM killer ends it (conmon leaves an `oom` file).
  const oom = await m.create({
    podSandboxId: f.pod.id,
    config: config('oom', 'exec dd if=/dev/zero of=/dev/null bs=64M count=1', { linux: { resources: { memoryLimitInBytes: 16n << 20n } } }),
    sandboxConfig: undefined,
  });
  assert.equal((await m.status(ok)).state, ContainerState.CONTAINER_CREATED);
  await m.start(ok);
  await m.start(bad);
  await m.start(oom);
  const okView = await exited(m, ok);
  const badView = await exited(m, bad);
  assert.equal(okView.record.exitCode, 0);
  assert.equal(okView.record.reason, 'Completed');
  assert.equal(badView.record.exitCode, 3);
  assert.equal(badView.record.reason, 'Error');
  const oomView = await exited(m, oom);
  assert.deepEqual([oomView.record.exitCode, oomView.record.reason], [137, 'OOMKilled']);
  const r = okView.record;
  assert.ok(BigInt(r.createdAt) <= BigInt(r.startedAt!) && BigInt(r.startedAt!) <= BigInt(r.finishedAt!), 'created <= started <= finished');
  assert.equal(r.logPath, join(f.logDir, 'ok/0.log'));
  assert.equal(r.imageId, IMAGE_ID);

  const lines = parseLog(readFileSync(r.logPath, 'utf8'));
  // stdout and stderr are separate pipes: order holds within a stream, not across them.
  assert.deepEqual(
    lines.filter((l) => l.stream === 'stdout').map((l) => [l.tag, l.text]),
    [
      ['F', 'one'],
      ['F', 'three 1'],
    ],
  );
  assert.deepEqual(
    lines.filter((l) => l.stream === 'stderr').map((l) => [l.tag, l.text]),
    [['F', 'two']],
  );
  for (const l of lines) assert.ok(!Number.isNaN(Date.parse(l.time)), `RFC 3339 time: ${l.time}`);

  // A second start is refused; the state machine does not go backwards.
  await assert.rejects(m.start(ok), grpcCode(Status.FAILED_PRECONDITION));
  const all = await m.list();
  assert.deepEqual(all.map((v) => v.record.id).sort(), [ok, bad, oom].sort());
  assert.ok(all.every((v) => v.state === ContainerState.CONTAINER_EXITED));
});

test('containers: ExecSync output and exit code, timeout kills the command, stats, resource update, log reopen', { timeout: 90_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const f = fixture();
  t.after(() => f.cleanup());
  const m = await f.open();
  const id = await m.create({
    podSandboxId: f.pod.id,
    config: config('svc', 'i=0; while true; do i=$((i+1)); echo "tick $i"; sleep 0.1; done', { linux: { resources: { memoryLimitInBytes: 64n << 20n } } }),
    sandboxConfig: undefined,
  });
  await m.start(id);
  assert.equal((await m.status(id)).state, ContainerState.CONTAINER_RUNNING);

  const r1 = await m.execSync(id, ['sh', '-c', 'echo out; echo err >&2; exit 5'], 0);
  assert.equal(r1.stdout.toString(), 'out\n');
  assert.equal(r1.stderr.toString(), 'err\n');
  assert.equal(r1.exitCode, 5);

  // Output beyond the cap is read and dropped; the command still completes (16 MiB in the RPC, 1000 bytes here).
  const own = (await m.runtimeSpec(id))!.process!;
  const capped = await m.runtimes.default.execSync(id, {
    process: execProcess(own, ['sh', '-c', 'head -c 300000 /dev/zero; echo done >&2'], false),
    maxOutputBytes: 1000,
  });
  assert.deepEqual([capped.stdout.length, capped.stderr.toString(), capped.exitCode], [1000, 'done\n', 0]);

  await assert.rejects(m.execSync(id, ['sh', '-c', 'sleep 30; echo never'], 1), grpcCode(Status.DEADLINE_EXCEEDED, /timed out/));
  // The timed-out command and its children are gone, not left running in the container.
  const ps = await until('timed-out exec to be killed', async () => {
    const out = (await m.execSync(id, ['ps', '-o', 'args'], 30)).stdout.toString();
    return out.includes('sleep 30') ? undefined : out;
  });
  assert.ok(!ps.includes('sleep 30'));

  // Stats: CPU time and memory from the container's cgroup, bytes in the writable layer.
  await m.execSync(id, ['sh', '-c', 'dd if=/dev/zero of=/big bs=1024 count=512 2>/dev/null; i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done'], 30);
  const stats = await containerStats(m, await m.status(id));
  const big = (v: string | number | bigint | undefined) => BigInt(v ?? 0);
  assert.ok(big(stats.cpu?.usageCoreNanoSeconds?.value) > 0n, 'cpu usage');
  assert.ok(big(stats.memory?.workingSetBytes?.value) > 0n, 'memory working set');
  assert.ok(big(stats.writableLayer?.usedBytes?.value) >= 512n * 1024n, 'writable layer holds /big');
  assert.equal(stats.memory?.availableBytes !== undefined, true, 'available bytes under a limit');

  // Resource update: runc update reaches the cgroup and the record.
  await m.updateResources(id, LinuxContainerResources.fromPartial({ cpuPeriod: 100000n, cpuQuota: 50000n, cpuShares: 256n, memoryLimitInBytes: 96n << 20n }));
  const rec = (await m.status(id)).record;
  assert.equal(rec.resources.memoryLimitInBytes, String(96n << 20n));
  const memDir = controllerDir('memory', rec.cgroupsPath);
  if (memDir && existsSync(join(memDir, 'memory.limit_in_bytes'))) {
    assert.equal(readFileSync(join(memDir, 'memory.limit_in_bytes'), 'utf8').trim(), String(96 << 20));
  } else if (memDir && existsSync(join(memDir, 'memory.max'))) {
    assert.equal(readFileSync(join(memDir, 'memory.max'), 'utf8').trim(), String(96 << 20));
  }

  // Log rotation: move the file away, reopen, new lines land in a fresh file.
  const logPath = rec.logPath;
  await until('first log lines', async () => existsSync(logPath) && readFileSync(logPath, 'utf8').includes('tick 2'));
  renameSync(logPath, `${logPath}.1`);
  await m.reopenLog(id);
  assert.ok(existsSync(logPath), 'the reopened log file exists when ReopenContainerLog answers');
  const fresh = await until(
    'lines in the reopened log',
    async () => (existsSync(logPath) ? parseLog(readFileSync(logPath, 'utf8')).filter((l) => l.tag === 'F') : []).length >= 2 && readFileSync(logPath, 'utf8'),
  );
  const before = parseLog(readFileSync(`${logPath}.1`, 'utf8')).map((l) => Number(l.text.split(' ')[1]));
  const after = parseLog(fresh).map((l) => Number(l.text.split(' ')[1]));
  assert.equal(after[0], before.at(-1)! + 1, 'no line lost or repeated across the reopen');

  await m.stop(id, 5);
  await assert.rejects(m.reopenLog(id), grpcCode(Status.FAILED_PRECONDITION));
  await assert.rejects(m.execSync(id, ['true'], 1), grpcCode(Status.FAILED_PRECONDITION, /not running/));
});

test('containers: StopContainer honours the stop signal, kills after the timeout, is idempotent; RemoveContainer cleans up', { timeout: 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const f = fixture();
  t.after(() => f.cleanup());
  const m = await f.open();
  const polite = await m.create({
    podSandboxId: f.pod.id,
    config: config('polite', 'trap "echo bye; exit 0" TERM; while true; do sleep 0.1; done'),
    sandboxConfig: undefined,
  });
  // sleep as PID 1 has no SIGTERM handler: the kernel ignores the signal, only SIGKILL ends it.
  const stubborn = await m.create({ podSandboxId: f.pod.id, config: config('stubborn', 'exec sleep 1000'), sandboxConfig: undefined });
  const neverStarted = await m.create({ podSandboxId: f.pod.id, config: config('idle', 'true'), sandboxConfig: undefined });
  await m.start(polite);
  await m.start(stubborn);
  const paths = m.paths(stubborn);
  assert.ok(await isMountPoint(paths.merged), 'rootfs mounted while it runs');
  // The shell has caught SIGTERM once its trap is set: wait for that, not for a while.
  const politePid = (await m.status(polite)).record.pid!;
  await until('the TERM trap to be installed', () => (catchesTerm(politePid) ? true : undefined));

  await m.stop(polite, 10);
  const p = await m.status(polite);
  assert.equal(p.state, ContainerState.CONTAINER_EXITED);
  assert.equal(p.record.exitCode, 0);
  assert.match(readFileSync(p.record.logPath, 'utf8'), /stdout F bye/);

  await m.stop(stubborn, 1);
  const s = await m.status(stubborn);
  assert.equal(s.record.exitCode, 137, 'SIGKILLed after the timeout');
  await m.stop(stubborn, 1); // again: fine

  // Once exited, the runtime state and the rootfs mount are released; the record stays.
  assert.equal(await isMountPoint(paths.merged), false, 'rootfs unmounted after exit');
  assert.ok(existsSync(paths.upper), 'writable layer kept until removal');

  // Stopping a container that never started leaves it CREATED (nothing runs yet), as containerd does.
  await m.stop(neverStarted, 0);
  assert.equal((await m.status(neverStarted)).state, ContainerState.CONTAINER_CREATED);

  await m.remove(stubborn);
  await m.remove(stubborn); // idempotent
  assert.equal(await isMountPoint(paths.merged), false, 'rootfs unmounted');
  assert.equal(existsSync(paths.dir), false, 'container dir removed');
  await assert.rejects(m.status(stubborn), grpcCode(Status.NOT_FOUND, new RegExp(stubborn)));
  // A removed container's name is free again.
  const again = await m.create({ podSandboxId: f.pod.id, config: config('stubborn', 'true'), sandboxConfig: undefined });
  assert.notEqual(again, stubborn);

  // Removing a running container kills it first.
  await m.start(again);
  const running = await m.create({ podSandboxId: f.pod.id, config: config('running', 'exec sleep 1000'), sandboxConfig: undefined });
  await m.start(running);
  await m.removeAllInPod(f.pod.id);
  assert.deepEqual(m.listByPod(f.pod.id), []);
  const runcRoot = join(f.state, 'runc');
  assert.deepEqual(
    (await readdir(runcRoot)).filter((n) => !n.startsWith('.')),
    [],
    'no runc state left',
  );
});

test('containers: errors name what is wrong', { timeout: 30_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const f = fixture();
  t.after(() => f.cleanup());
  const m = await f.open();
  const missing = 'f'.repeat(64);
  await assert.rejects(m.status(missing), grpcCode(Status.NOT_FOUND, new RegExp(missing)));
  await assert.rejects(m.start(missing), grpcCode(Status.NOT_FOUND, new RegExp(missing)));
  await m.stop(missing, 0); // idempotent, as the CRI requires
  await assert.rejects(m.execSync(missing, ['true'], 0), grpcCode(Status.NOT_FOUND, new RegExp(missing)));
  await m.remove(missing); // idempotent
  await assert.rejects(m.create({ podSandboxId: 'nopod', config: config('x', 'true'), sandboxConfig: undefined }), grpcCode(Status.NOT_FOUND, /nopod/));
  await assert.rejects(
    m.create({ podSandboxId: f.pod.id, config: config('x', 'true', { image: { image: 'nosuch:1' } }), sandboxConfig: undefined }),
    grpcCode(Status.NOT_FOUND, /nosuch:1/),
  );
  await assert.rejects(
    m.create({
      podSandboxId: f.pod.id,
      config: config('x', 'true', { linux: { securityContext: { capabilities: { addCapabilities: ['BOGUS'] } } } }),
      sandboxConfig: undefined,
    }),
    grpcCode(Status.INVALID_ARGUMENT, /add_capabilities/),
  );
  await assert.rejects(
    m.create({
      podSandboxId: f.pod.id,
      config: config('x', 'true', { mounts: [{ containerPath: '/x', hostPath: '/does/not/exist' }] }),
      sandboxConfig: undefined,
    }),
    grpcCode(Status.INVALID_ARGUMENT, /mounts\[0\]\.host_path/),
  );
  await assert.rejects(
    m.create({ podSandboxId: f.pod.id, config: config('x', 'true', { linux: { securityContext: { runAsUsername: 'ghost' } } }), sandboxConfig: undefined }),
    grpcCode(Status.INVALID_ARGUMENT, /run_as_username/),
  );
  const id = await m.create({ podSandboxId: f.pod.id, config: config('dup', 'true'), sandboxConfig: undefined });
  await assert.rejects(
    m.create({ podSandboxId: f.pod.id, config: config('dup', 'true'), sandboxConfig: undefined }),
    grpcCode(Status.ALREADY_EXISTS, new RegExp(id)),
  );
  // Failed creates leave nothing behind.
  assert.deepEqual((await readdir(join(f.root, 'containers'))).sort(), [id]);
});

test('containers: kill -9 of the daemon process; a restart finds running and exited containers in their true state', { timeout: 90_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const f = fixture();
  t.after(() => f.cleanup());
  // The first "daemon" is a separate process that opens the subsystem, starts two containers and
  // then gets SIGKILLed; conmon keeps both containers and their logs going meanwhile.
  const spec = JSON.stringify({ root: f.root, state: f.state, pod: { ...f.pod, createdAt: '0' }, rootfs: f.rootfsDir, image: IMAGE_ID });
  const script = `
    import { ContainerManager } from ${JSON.stringify(new URL('../../node/skiffd/containers/manager.ts', import.meta.url).href)};
    import { makeOciRuntime } from ${JSON.stringify(new URL('../../node/skiffd/oci/index.ts', import.meta.url).href)};
    import { ContainerConfig } from ${JSON.stringify(new URL('../../proto/gen/runtime/v1/api.ts', import.meta.url).href)};
    const s = JSON.parse(process.env.SPEC);
    const m = new ContainerManager({ root: s.root, state: s.state, runtime: makeOciRuntime({ root: s.state + '/runc' }),
      pods: { get: (id) => (id === s.pod.id ? s.pod : undefined) },
      images: { resolve: () => ({ id: s.image, ref: s.image, layers: [s.rootfs], config: {} }) } });
    await m.init();
    const cfg = (name, script) => ContainerConfig.fromPartial({ metadata: { name }, image: { image: 'busybox' }, command: ['sh', '-c', script], logPath: name + '/0.log' });
    const a = await m.create({ podSandboxId: s.pod.id, config: cfg('keeps', 'i=0; while true; do i=$((i+1)); echo "n $i"; sleep 0.1; done') });
    const b = await m.create({ podSandboxId: s.pod.id, config: cfg('ends', 'while [ ! -e /tmp/go ]; do sleep 0.1; done; for i in 1 2 3; do echo "late $i"; done; exit 7') });
    const c = await m.create({ podSandboxId: s.pod.id, config: cfg('halfway', 'true') });
    await m.start(a);
    await m.start(b);
    console.log(JSON.stringify({ a, b, c }));
    setInterval(() => {}, 1000);
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    env: { ...process.env, SPEC: spec },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  t.after(() => child.kill('SIGKILL'));
  const ids = await until(
    'the first daemon to start its containers',
    async () =>
      out.includes('\n')
        ? (JSON.parse(out.split('\n')[0]) as { a: string; b: string; c: string })
        : child.exitCode !== null
          ? Promise.reject(new Error(`child died: ${err}`))
          : undefined,
    30_000,
  );
  child.kill('SIGKILL');
  await until('the first daemon to die', async () => child.exitCode !== null || child.signalCode !== null);

  // While no daemon runs: container b finishes (exit 7) and logs its last lines.
  const bDir = join(f.root, 'containers', ids.b, 'rootfs');
  writeFileSync(join(bDir, 'tmp/go'), 'go\n');
  await until('b to exit while the daemon is down', async () => existsSync(join(f.state, 'exits', ids.b)));

  // A half-done create (crash between the record and the runtime) is also on disk.
  const half = randomBytes(32).toString('hex');
  const halfDir = join(f.root, 'containers', half);
  mkdirSync(join(halfDir, 'upper'), { recursive: true });
  writeFileSync(join(halfDir, 'container.json'), JSON.stringify({ version: 1, id: half, phase: 'creating', fullName: 'half', lowerDirs: [f.rootfsDir] }));

  const m = await f.open();
  const a = await m.status(ids.a);
  assert.equal(a.state, ContainerState.CONTAINER_RUNNING, 'a kept running');
  const b = await m.status(ids.b);
  assert.equal(b.state, ContainerState.CONTAINER_EXITED);
  assert.equal(b.record.exitCode, 7);
  assert.equal(b.record.reason, 'Error');
  assert.ok(BigInt(b.record.finishedAt!) > BigInt(b.record.startedAt!));
  assert.deepEqual(
    parseLog(readFileSync(b.record.logPath, 'utf8')).map((l) => l.text),
    ['late 1', 'late 2', 'late 3'],
    'lines written while the daemon was down',
  );
  assert.equal((await m.status(ids.c)).state, ContainerState.CONTAINER_CREATED, 'created, never started');
  assert.equal(existsSync(halfDir), false, 'half-done create cleaned up');

  // a's log has no gap across the crash, and the new daemon still controls it.
  const aLines = parseLog(readFileSync(a.record.logPath, 'utf8')).map((l) => Number(l.text.split(' ')[1]));
  assert.deepEqual(
    aLines,
    aLines.map((_, i) => i + 1),
  );
  const exec = await m.execSync(ids.a, ['echo', 'still here'], 30);
  assert.equal(exec.stdout.toString(), 'still here\n');
  await m.start(ids.c);
  await exited(m, ids.c);
  await m.stop(ids.a, 0);
  assert.equal((await m.status(ids.a)).record.exitCode, 137);
  const events: number[] = [];
  m.events.on('event', (e: { type: number }) => events.push(e.type));
  await m.remove(ids.a);
  assert.ok(events.includes(ContainerEventType.CONTAINER_DELETED_EVENT));
  const rootfs = rootfsDirs(join(f.root, 'containers', ids.b)).merged;
  await m.remove(ids.b);
  assert.equal(await isMountPoint(rootfs), false);
});

test('containers: a crash in the middle of StartContainer is finished or undone on restart', { timeout: 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const f = fixture();
  t.after(() => f.cleanup());
  const m1 = await f.open();
  const a = await m1.create({ podSandboxId: f.pod.id, config: config('mid-a', 'echo started-a; exec sleep 1000'), sandboxConfig: undefined });
  const b = await m1.create({ podSandboxId: f.pod.id, config: config('mid-b', 'echo started-b; exec sleep 1000'), sandboxConfig: undefined });
  // Crash after conmon created the container but before the record changed (a), and after the
  // record said "running" but before `runc start` (b): replay those steps by hand.
  const createOptions = (id: string) => {
    const p = m1.paths(id);
    const rec = m1.get(id)!;
    return { id, bundle: p.bundle, logPath: rec.conmonLogPath, exitDir: m1.exitDir, persistDir: p.persist, socketDir: m1.socketDir };
  };
  await m1.runtimes.default.create(createOptions(a));
  await m1.runtimes.default.create(createOptions(b));
  const recB = join(f.root, 'containers', b, 'container.json');
  writeFileSync(recB, JSON.stringify({ ...JSON.parse(readFileSync(recB, 'utf8')), phase: 'running', startedAt: '1' }));
  await m1.close();

  const m2 = await f.open();
  for (const id of [a, b]) {
    assert.equal((await m2.status(id)).state, ContainerState.CONTAINER_CREATED, 'not started yet');
    await m2.start(id);
    const v = await m2.status(id);
    assert.equal(v.state, ContainerState.CONTAINER_RUNNING);
    await until('its first log line', async () => existsSync(v.record.logPath) && readFileSync(v.record.logPath, 'utf8').includes('started-'));
    assert.equal(parseLog(readFileSync(v.record.logPath, 'utf8')).length, 1, 'one run, one line');
    await m2.stop(id, 0);
    assert.equal((await m2.status(id)).record.exitCode, 137);
  }
});

test('containers: a container whose conmon died is reported exited once it ends, not running forever', { timeout: 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const f = fixture();
  t.after(() => f.cleanup());
  const m = await f.open();
  const id = await m.create({ podSandboxId: f.pod.id, config: config('orphan', 'exec sleep 1000'), sandboxConfig: undefined });
  await m.start(id);
  const rec = (await m.status(id)).record;
  assert.ok(rec.conmonPid && rec.pid);
  process.kill(rec.conmonPid!, 'SIGKILL');
  process.kill(rec.pid!, 'SIGKILL');
  const v = await until('the orphaned container to be seen exited', async () => {
    const s = await m.status(id);
    return s.state === ContainerState.CONTAINER_EXITED ? s : undefined;
  });
  assert.equal(v.record.exitCode, 255);
  assert.match(v.record.message ?? '', /monitor/);
});

test('containers: concurrent calls on one container are serialized and end in a consistent state', { timeout: 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const f = fixture();
  t.after(() => f.cleanup());
  const m = await f.open();
  const id = await m.create({ podSandboxId: f.pod.id, config: config('busy', 'exec sleep 1000'), sandboxConfig: undefined });
  const settled = await Promise.allSettled([
    m.start(id),
    m.start(id),
    m.status(id),
    m.stop(id, 0),
    m.execSync(id, ['true'], 5),
    m.stop(id, 1),
    m.remove(id),
    m.status(id),
    m.remove(id),
  ]);
  // Exactly one start can win; every failure is a gRPC status, never a crash or a hang.
  for (const s of settled) if (s.status === 'rejected') assert.ok(s.reason instanceof ServerError, String(s.reason));
  assert.ok(settled.filter((s, i) => i < 2 && s.status === 'fulfilled').length <= 1);
  await assert.rejects(m.status(id), grpcCode(Status.NOT_FOUND));
  assert.equal(existsSync(m.paths(id).dir), false);
  assert.deepEqual(
    (await readdir(join(f.state, 'runc'))).filter((n) => !n.startsWith('.')),
    [],
  );
});

test('containers: user, read-only rootfs, capabilities, mounts, devices and a Localhost seccomp profile take effect', { timeout: 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const f = fixture();
  t.after(() => f.cleanup());
  const m = await f.open();
  const profile = join(f.dir, 'no-mkdir.json');
  writeFileSync(
    profile,
    JSON.stringify({ defaultAction: 'SCMP_ACT_ALLOW', syscalls: [{ names: ['mkdir', 'mkdirat'], action: 'SCMP_ACT_ERRNO', errnoRet: 1 }] }),
  );
  const run = async (name: string, script: string, extra: DeepPartial<ContainerConfig>) => {
    const id = await m.create({ podSandboxId: f.pod.id, config: config(name, script, extra), sandboxConfig: undefined });
    await m.start(id);
    const v = await exited(m, id);
    return parseLog(readFileSync(v.record.logPath, 'utf8')).map((l) => l.text);
  };
  const locked = await run('locked', 'id -u; id -G; touch /x 2>/dev/null && echo rw || echo ro; grep CapEff /proc/self/status', {
    linux: { securityContext: { runAsUsername: 'nobody', supplementalGroups: [10n], readonlyRootfs: true, capabilities: { dropCapabilities: ['ALL'] } } },
  });
  assert.deepEqual(locked, ['65534', '65534 10', 'ro', 'CapEff:\t0000000000000000']);
  const data = join(f.dir, 'data');
  mkdirSync(data);
  writeFileSync(join(data, 'in.txt'), 'from the host\n');
  const mounted = await run(
    'mounted',
    'cat /data/in.txt; touch /data/new 2>/dev/null && echo rw || echo ro; test -c /dev/xnull && echo device; echo hi > /dev/xnull && echo writable',
    {
      mounts: [{ containerPath: '/data', hostPath: data, readonly: true }],
      devices: [{ containerPath: '/dev/xnull', hostPath: '/dev/null', permissions: 'rw' }],
    },
  );
  assert.deepEqual(mounted, ['from the host', 'ro', 'device', 'writable']);
  assert.equal(existsSync(join(data, 'new')), false);
  const privileged = await run(
    'privileged',
    'grep CapEff /proc/self/status; test -c /dev/kmsg && echo kmsg; mkdir -p /mnt/t && mount -t tmpfs none /mnt/t && echo mounted',
    {
      linux: { securityContext: { privileged: true } },
    },
  );
  assert.deepEqual(privileged.slice(1), ['kmsg', 'mounted']);
  assert.notEqual(privileged[0], 'CapEff:\t0000000000000000');
  const filtered = await run('filtered', 'mkdir /tmp/d 2>/dev/null && echo made || echo denied; touch /tmp/f && echo touched', {
    linux: { securityContext: { seccomp: { profileType: 2, localhostRef: profile } } },
  });
  assert.deepEqual(filtered, ['denied', 'touched']);
  const userns = 'unshare -U true 2>/dev/null && echo unshared || echo refused';
  assert.deepEqual(await run('unconfined', userns, {}), ['unshared']);
  assert.deepEqual(await run('runtime-default', userns, { linux: { securityContext: { seccomp: { profileType: 0 } } } }), ['refused']);
  await assert.rejects(
    m.create({
      podSandboxId: f.pod.id,
      config: config('noprofile', 'true', { linux: { securityContext: { seccomp: { profileType: 2, localhostRef: join(f.dir, 'missing.json') } } } }),
      sandboxConfig: undefined,
    }),
    grpcCode(Status.INVALID_ARGUMENT, /seccomp\.localhost_ref/),
  );
});

test("containers: TARGET PID mode joins another container's PID namespace", { timeout: 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const f = fixture();
  t.after(() => f.cleanup());
  const m = await f.open();
  const target = await m.create({ podSandboxId: f.pod.id, config: config('target', 'exec sleep 1000'), sandboxConfig: undefined });
  const debugCfg = (targetId: string) =>
    config('debug', 'cat /proc/1/cmdline | tr "\\0" " "; echo', { linux: { securityContext: { namespaceOptions: { pid: NamespaceMode.TARGET, targetId } } } });
  // The target must be running.
  await assert.rejects(
    m.create({ podSandboxId: f.pod.id, config: debugCfg(target), sandboxConfig: undefined }),
    grpcCode(Status.INVALID_ARGUMENT, /target_id/),
  );
  await m.start(target);
  const debug = await m.create({ podSandboxId: f.pod.id, config: debugCfg(target), sandboxConfig: undefined });
  await m.start(debug);
  const v = await exited(m, debug);
  assert.deepEqual(
    fullLines(parseLog(readFileSync(v.record.logPath, 'utf8'))).map((text) => text.trim()),
    ['sleep 1000'],
  );
});

test('containers: resources updated before the start apply when it starts', { timeout: 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const f = fixture();
  t.after(() => f.cleanup());
  const m = await f.open();
  const id = await m.create({
    podSandboxId: f.pod.id,
    config: config('later', 'exec sleep 1000', { linux: { resources: { memoryLimitInBytes: 64n << 20n } } }),
    sandboxConfig: undefined,
  });
  await m.updateResources(id, LinuxContainerResources.fromPartial({ memoryLimitInBytes: 48n << 20n }));
  await m.start(id);
  const rec = (await m.status(id)).record;
  assert.equal(rec.resources.memoryLimitInBytes, String(48 << 20));
  const memDir = controllerDir('memory', rec.cgroupsPath)!;
  const file = existsSync(join(memDir, 'memory.limit_in_bytes')) ? 'memory.limit_in_bytes' : 'memory.max';
  assert.equal(readFileSync(join(memDir, file), 'utf8').trim(), String(48 << 20));
  await m.stop(id, 0);
  await assert.rejects(
    m.updateResources(id, LinuxContainerResources.fromPartial({ memoryLimitInBytes: 1n << 30n })),
    grpcCode(Status.FAILED_PRECONDITION, /exited/),
  );
});

test('containers: a timed-out ExecSync leaves no process behind, not even a zombie, under an init that never reaps', { timeout: 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const f = fixture();
  t.after(() => f.cleanup());
  const m = await f.open();
  // tail never calls wait(): an orphan handed to it stays a zombie for as long as the container runs.
  const id = await m.create({ podSandboxId: f.pod.id, config: config('no-reaper', 'exec tail -f /dev/null'), sandboxConfig: undefined });
  await m.start(id);
  for (let i = 0; i < 3; i++) {
    await assert.rejects(m.execSync(id, ['sleep', '4321'], 1), grpcCode(Status.DEADLINE_EXCEEDED, /timed out after 1s/));
    // Asked at once, as critest does: any sleep process, live or zombie, shows in /proc.
    const left = await m.execSync(id, ['sh', '-c', 'grep -l "(sleep)" /proc/[0-9]*/stat || true'], 30);
    assert.equal(left.stdout.toString().trim(), '', `round ${i}: processes left behind: ${left.stdout}`);
  }
});

test('containers: a stop signal sent before the program could handle it is delivered once it can', { timeout: 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const f = fixture();
  t.after(() => f.cleanup());
  const m = await f.open();
  // As PID 1 the shell drops SIGTERM until its trap is set; a stop that comes first must not be lost.
  const id = await m.create({
    podSandboxId: f.pod.id,
    config: config('late-trap', 'sleep 0.5; trap "echo bye; exit 0" TERM; while true; do sleep 0.1; done'),
    sandboxConfig: undefined,
  });
  await m.start(id);
  await m.stop(id, 20);
  const v = await m.status(id);
  assert.equal(v.record.exitCode, 0, 'the trap ran: the signal was not lost and no SIGKILL was needed');
  assert.match(readFileSync(v.record.logPath, 'utf8'), /stdout F bye/);
  // A program that takes seconds to get there (a loaded node, a slow runtime) still gets it within the timeout.
  const slow = await m.create({
    podSandboxId: f.pod.id,
    config: config('slow-trap', 'sleep 3; trap "echo bye; exit 0" TERM; while true; do sleep 0.1; done'),
    sandboxConfig: undefined,
  });
  await m.start(slow);
  await m.stop(slow, 15);
  assert.equal((await m.status(slow)).record.exitCode, 0, 'a trap set 3 s into a 15 s stop timeout still got the signal');
  await m.remove(slow);
  // Stops right after starts, as critest's benchmark does them: each ends by the program's own handler.
  for (let i = 0; i < 10; i++) {
    const quick = await m.create({
      podSandboxId: f.pod.id,
      config: config(`quick-${i}`, 'trap "exit 0" TERM; while true; do sleep 0.1; done'),
      sandboxConfig: undefined,
    });
    await m.start(quick);
    await m.stop(quick, 20);
    assert.equal((await m.status(quick)).record.exitCode, 0, `container ${i} ended by its trap`);
    await m.remove(quick);
  }
});

test('containers: 50 containers leave no exit waits, CPU readings or listener warnings behind', { timeout: 120_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const f = fixture();
  t.after(() => f.cleanup());
  const m = await f.open();
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
  process.on('warning', onWarning);
  t.after(() => process.off('warning', onWarning));
  const ids: string[] = [];
  for (let i = 0; i < 50; i++) {
    const id = await m.create({
      podSandboxId: f.pod.id,
      config: config(`many-${i}`, 'trap "exit 0" TERM; while true; do sleep 0.1; done'),
      sandboxConfig: undefined,
    });
    await m.start(id);
    ids.push(id);
  }
  for (const id of ids) await containerStats(m, await m.status(id));
  assert.equal(m.cpuRate.size, 50);
  // All stopped at once: 50 exit waits in flight together.
  await Promise.all(ids.map((id) => m.stop(id, 20)));
  assert.equal(m.pendingExitWaits(), 0);
  await Promise.all(ids.map((id) => m.remove(id)));
  assert.equal(m.cpuRate.size, 0, 'removed containers keep no CPU reading');
  assert.deepEqual(
    warnings.filter((w) => /MaxListeners/.test(w)),
    [],
  );
});

test('containers: CheckpointContainer dumps a running container with CRIU, or says why CRIU cannot', { timeout: 120_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon', 'criu'] })) return;
  const f = fixture();
  t.after(() => f.cleanup());
  const m = await f.open();
  const id = await m.create({ podSandboxId: f.pod.id, config: config('dumped', 'i=0; while true; do i=$((i+1)); sleep 0.1; done'), sandboxConfig: undefined });
  await m.start(id);
  const archive = join(f.dir, 'dumped.tar.gz');
  await assert.rejects(m.checkpoint(id, 'relative.tar'), grpcCode(Status.INVALID_ARGUMENT, /location/));
  // What CRIU itself says about this kernel decides which answer is right.
  const criu = await runCommand('criu', ['check'], { timeoutMs: 30_000 });
  const check = { ok: criu.code === 0, text: `${criu.stdout}${criu.stderr}` };

  if (check.ok) {
    await m.checkpoint(id, archive);
    const listing = (await runCommand('tar', ['-tzf', archive], { timeoutMs: 30_000 })).stdout;

    assert.match(listing, /^checkpoint\/inventory\.img$/m);
    assert.match(listing, /^spec\.dump$/m);
    assert.match(listing, /^config\.dump$/m);
    assert.equal((await m.status(id)).state, ContainerState.CONTAINER_RUNNING, 'the container keeps running');
  } else {
    const reason = check.text
      .split('\n')
      .find((l) => /error/i.test(l))!
      .trim();
    await assert.rejects(m.checkpoint(id, archive), grpcCode(Status.FAILED_PRECONDITION, /CRIU cannot checkpoint on this node/));
    await assert.rejects(m.checkpoint(id, archive), (err: unknown) => err instanceof ServerError && err.details.includes(reason));
    assert.equal(existsSync(archive), false, 'no archive is left behind');
  }
  await m.stop(id, 0);
  await assert.rejects(m.checkpoint(id, archive), grpcCode(Status.FAILED_PRECONDITION, /not running/));
});
