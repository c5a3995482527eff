// The exec helper runs ExecSync's `runc exec` without forking the daemon. It must behave like a spawn
// of its own: arguments unchanged, stdout and stderr apart, the exit status (128 + signal for a
// signal), output cut at the limit, many commands at once each with its own output, the command's pid
// reported (a timeout kills by it), and calls in flight fail, not hang, when the helper dies. Its
// directory holds every exec's files, so it must be root's alone: checked, and emptied at start-up.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { ContainerConfig, ContainerState } from '../../proto/gen/runtime/v1/api.ts';
import { dirname, join } from 'node:path';
import { ExecHelper } from '../../node/skiffd/oci/exec-helper.ts';
import { execProcess } from '../../node/skiffd/oci/exec-process.ts';
import { CliOciRuntime } from '../../node/skiffd/oci/runc.ts';
import { needs } from '../support/prereq.ts';
import { startRuncContainers } from '../support/runc-containers.ts';
import { until } from '../support/wait.ts';

function helper(t: { after(fn: () => void): void }): { h: ExecHelper; dir: string } {
  const base = mkdtempSync(join(tmpdir(), 'exec-helper-'));
  const dir = join(base, 'io');
  const h = new ExecHelper(dir);
  t.after(() => {
    h.close();
    rmSync(base, { recursive: true, force: true });
  });
  return { h, dir };
}

test('exec helper: arguments, stdout/stderr, exit status and signals come back as from a spawn', async (t) => {
  const { h, dir } = helper(t);
  const args = ['a b', '', 'x\\y', ' lead', 'trail ', '$HOME', '"q"', "'s'", '*', '-n'];
  const echo = await h.run('/usr/bin/printf', ['%s|', ...args], 1 << 20, () => {});
  assert.equal(echo.status, 0);
  assert.equal(echo.stdout.toString(), args.map((a) => `${a}|`).join(''));
  assert.equal(echo.stderr.length, 0);

  const both = await h.run('sh', ['-c', 'echo out; echo err >&2; exit 3'], 1 << 20, () => {});
  assert.deepEqual([both.status, both.stdout.toString(), both.stderr.toString()], [3, 'out\n', 'err\n']);

  const killed = await h.run('sh', ['-c', 'kill -KILL $$'], 1 << 20, () => {});
  assert.equal(killed.status, 128 + 9);

  const capped = await h.run('sh', ['-c', 'head -c 300000 /dev/zero; echo done >&2'], 1000, () => {});
  assert.equal(capped.stdout.length, 1000);
  assert.equal(capped.stderr.toString(), 'done\n');

  // Binary output is kept byte for byte.
  const bytes = await h.run('printf', ['\\377\\000\\001'], 100, () => {});
  assert.deepEqual([...bytes.stdout], [0xff, 0, 1]);
  // Output files do not pile up (they go right after each call, off the event loop).
  await until('the output files to go', () => readdirSync(dir).length === 0);
});

test('exec helper: files a previous daemon left in its directory are removed when it starts', async (t) => {
  const base = mkdtempSync(join(tmpdir(), 'exec-helper-'));
  const dir = join(base, 'io');
  mkdirSync(dir);
  writeFileSync(join(dir, '1-7.out'), 'left over');
  const h = new ExecHelper(dir);
  t.after(() => {
    h.close();
    rmSync(base, { recursive: true, force: true });
  });
  assert.equal((await h.run('true', [], 100, () => {})).status, 0);
  await until('the directory to be empty', () => readdirSync(dir).length === 0);
});

test('exec helper: commands run at once, each with its own output, and report their pid', async (t) => {
  const { h } = helper(t);
  const pids: number[] = [];
  // Each command marks that it started, then waits (bounded) until all twelve have: run one at a time,
  // the first would give up and answer "alone" instead of its number. No clock decides the verdict.
  const barrier = mkdtempSync(join(tmpdir(), 'skiff-exec-barrier-'));
  t.after(() => rmSync(barrier, { recursive: true, force: true }));
  const script = (i: number) =>
    `touch ${barrier}/${i}; n=0; while [ "$(ls ${barrier} | wc -l)" -lt 12 ]; do n=$((n+1)); [ $n -gt 1200 ] && { echo alone; exit 1; }; sleep 0.05; done; echo ${i}`;
  const runs = await Promise.all(Array.from({ length: 12 }, (_, i) => h.run('sh', ['-c', script(i)], 100, (pid) => pids.push(pid))));
  assert.deepEqual(
    runs.map((r) => r.stdout.toString()),
    runs.map((_, i) => `${i}\n`),
    'all twelve were running at once',
  );
  assert.equal(new Set(pids).size, 12);

  // The pid is the command's: killing it ends the call with its signal.
  let pid = 0;
  const sleeping = h.run('sleep', ['600'], 100, (p) => (pid = p));
  for (const deadline = Date.now() + 10_000; !pid && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 20));
  assert.ok(pid > 0, 'the pid arrived');
  process.kill(pid, 'SIGKILL');
  assert.equal((await sleeping).status, 128 + 9);
});

test('exec helper: a call in flight fails when the helper goes, and the next call starts a new one', async (t) => {
  const { h } = helper(t);
  const pending = h.run('sleep', ['600'], 100, () => {});
  await new Promise((r) => setTimeout(r, 200));
  h.close();
  await assert.rejects(pending, /exec helper/);
  const again = await h.run('echo', ['back'], 100, () => {});
  assert.equal(again.stdout.toString(), 'back\n');
});

test('exec helper: a directory someone else could write into is refused, naming it; one group or others may use is made 0700', async (t) => {
  if (!needs(t, { root: true })) return;
  const base = mkdtempSync(join(tmpdir(), 'exec-helper-'));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const helperOn = (dir: string) => {
    const h = new ExecHelper(dir);
    t.after(() => h.close());
    return h;
  };

  const foreign = join(base, 'foreign');
  mkdirSync(foreign, { mode: 0o700 });
  chownSync(foreign, 65534, 65534);
  writeFileSync(join(base, 'keep'), '');
  const refused = (dir: string, why: RegExp) => {
    const h = helperOn(dir);
    assert.throws(
      () => h.file('pid'),
      (err: Error) => err.message.includes(dir) && why.test(err.message),
    );
    // The check runs again on the next call: it never becomes usable by being asked twice.
    assert.throws(() => h.file('pid'), why);
  };
  refused(foreign, /owned by uid 65534/);

  const target = join(base, 'target');
  mkdirSync(target, { mode: 0o700 });
  symlinkSync(target, join(base, 'link'));
  refused(join(base, 'link'), /symbolic link/);

  const open = join(base, 'open');
  mkdirSync(open);
  chmodSync(open, 0o777);
  refused(join(open, 'io'), /others can write/);
  chmodSync(open, 0o1777); // the sticky bit, as on /tmp: nobody renames what is not theirs
  const underSticky = helperOn(join(open, 'io'));
  assert.ok(underSticky.file('pid').startsWith(join(open, 'io')));

  const loose = join(base, 'loose');
  mkdirSync(loose);
  chmodSync(loose, 0o755);
  const h = helperOn(loose);
  const file = h.file('pid');
  assert.equal(dirname(file), loose);
  assert.equal(statSync(loose).mode & 0o777, 0o700, 'an existing directory is made 0700 (mkdir leaves its mode alone)');
});

test('exec helper: the runtime sweeps its exec directory when it is made, and a directory not its own fails each exec, not the daemon', async (t) => {
  if (!needs(t, { root: true })) return;
  const base = mkdtempSync(join(tmpdir(), 'exec-helper-'));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  const good = join(base, 'good');
  mkdirSync(`${good}-exec`, { mode: 0o755 });
  writeFileSync(join(`${good}-exec`, '4242-f1.process.json'), '{"env":["TOKEN=secret"]}');
  const runtime = new CliOciRuntime({ path: '/bin/false', root: good });
  t.after(() => runtime.close());
  assert.deepEqual(readdirSync(`${good}-exec`), [], 'what a crash left is gone at start-up, before any exec');
  assert.equal(statSync(`${good}-exec`).mode & 0o777, 0o700);

  const bad = join(base, 'bad');
  mkdirSync(`${bad}-exec`, { mode: 0o700 });
  chownSync(`${bad}-exec`, 65534, 65534);
  const broken = new CliOciRuntime({ path: '/bin/false', root: bad });
  t.after(() => broken.close());
  assert.throws(() => broken.execFile('pid'), new RegExp(`${bad}-exec is owned by uid 65534`));
  await assert.rejects(broken.execSync('c1', { process: { args: ['true'], env: [], cwd: '/', user: { uid: 0, gid: 0 } } }), /owned by uid 65534/);
});

/** Bytes in the regular files and FIFOs of a directory now (files come and go while a call runs). */
function dirBytes(dir: string): number {
  let total = 0;
  for (const name of readdirSync(dir)) total += statSync(join(dir, name), { throwIfNoEntry: false })?.size ?? 0;
  return total;
}

test('exec helper: no more than the cap of a command output reaches the disk; the command runs on and its status comes back', {
  timeout: 60_000,
}, async (t) => {
  const { h, dir } = helper(t);
  const go = join(dirname(dir), 'go');
  const cap = 64 * 1024;
  // 64 MiB on stdout, a word on stderr, then it marks that it wrote and waits to be told to exit:
  // while it waits, what it wrote is all it will write, and the directory holds what went to disk.
  const wrote = join(dirname(dir), 'wrote');
  const script = 'head -c 67108864 /dev/zero; echo written >&2; touch "$2"; while [ ! -e "$1" ]; do sleep 0.05; done; exit 7';
  const call = h.run('sh', ['-c', script, 'sh', go, wrote], cap, () => {});
  await until('the command to have written everything', () => existsSync(wrote), 30_000);
  const onDisk = dirBytes(dir);
  writeFileSync(go, '');
  const r = await call;
  assert.ok(onDisk >= cap, `the cap of stdout reached the disk, saw ${onDisk} bytes`);
  assert.ok(onDisk <= 2 * cap + 4096, `at most the cap of each stream on disk, not ${onDisk} bytes`);
  assert.deepEqual([r.status, r.stdout.length, r.stderr.toString()], [7, cap, 'written\n']);
  await until('the output files to go', () => readdirSync(dir).length === 0);

  // Something the command leaves running holds its output open: the call still answers once the
  // command has ended (the test's own timeout bounds it), with what it wrote.
  const left = await h.run('sh', ['-c', 'echo ok; echo err >&2; sleep 600 & exit 3'], cap, () => {});
  assert.deepEqual([left.status, left.stdout.toString(), left.stderr.toString()], [3, 'ok\n', 'err\n']);
});

test('ExecSync of `yes` until its timeout: at most the cap of its output on disk at any time, the result cut at the cap', { timeout: 120_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const { manager: m, pod, state, cgroupParent } = await startRuncContainers(t);
  const id = await m.create({
    podSandboxId: pod.id,
    config: ContainerConfig.fromPartial({ metadata: { name: 'yes', attempt: 0 }, image: { image: 'busybox' }, command: ['sleep', '3600'] }),
    sandboxConfig: undefined,
  });
  await m.start(id);
  await until('the container to run', async () => (await m.status(id)).state === ContainerState.CONTAINER_RUNNING);
  const execDir = `${join(state, 'runc')}-exec`;
  const cap = 1 << 20;
  let most = 0;
  const poll = setInterval(() => (most = Math.max(most, dirBytes(execDir))), 10);
  t.after(() => clearInterval(poll));
  const r = await m.runtimes.default.execSync(id, {
    process: execProcess((await m.runtimeSpec(id))!.process!, ['yes'], false),
    maxOutputBytes: cap,
    timeoutMs: 2000,
    cgroupPath: `${cgroupParent}/skiffd-${id}`,
  });
  clearInterval(poll);
  assert.equal(r.timedOut, true);
  assert.equal(r.exitCode, 128 + 9, 'killed at the timeout');
  assert.equal(r.stdout.length, cap);
  assert.ok(most > 0, 'the poll saw the output');
  assert.ok(most <= 2 * cap + 64 * 1024, `at most the cap on disk, saw ${most} bytes`);
});

test("ExecSync's timeout signals the pid the runtime's pid file names only when it is in the container's cgroup", { timeout: 60_000 }, async (t) => {
  const base = mkdtempSync(join(tmpdir(), 'exec-helper-'));
  t.after(() => rmSync(base, { recursive: true, force: true }));
  // Someone else's process, alone in its group, that a runtime's pid file names.
  const victim = spawn('sleep', ['600'], { detached: true, stdio: 'ignore' });
  t.after(() => victim.kill('SIGKILL'));
  writeFileSync(join(base, 'victim'), `${victim.pid}`);
  const fake = join(base, 'runtime');
  writeFileSync(
    fake,
    `#!/bin/sh\nwhile [ $# -gt 0 ]; do [ "$1" = --pid-file ] && pf=$2; shift; done\ncat ${base}/victim >"$pf.tmp" && mv "$pf.tmp" "$pf"\nexec sleep 600\n`,
    { mode: 0o755 },
  );
  for (const newline of [false, true]) {
    // A newline in an argument takes the direct spawn instead of the helper.
    const runtime = new CliOciRuntime({ path: fake, root: join(base, newline ? 'spawned' : 'helper') });
    t.after(() => runtime.close());
    const r = await runtime.execSync('c1', {
      process: { args: ['true', newline ? 'a\nb' : 'ab'], env: [], cwd: '/', user: { uid: 0, gid: 0 } },
      timeoutMs: 200,
      cgroupPath: '/skiffd-test/skiffd-c1',
    });
    // The runtime itself is killed after its grace period; by then the victim would have been.
    assert.equal(r.timedOut, true);
    assert.equal(victim.exitCode ?? victim.signalCode, null, 'the process outside the container lives');
    assert.equal(living(victim.pid!), true, 'the process outside the container lives');
  }
});

function living(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}
