// Counting a cgroup's processes from /proc (file descriptors, sockets, thread states, the open-files
// limit) for the cAdvisor-style metrics, and the bounds that keep a container from making the count
// expensive: real processes moved into real cgroups made here, under a parent of the test's own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cgroupLayout, controllerDir } from '../../node/skiffd/cgroups/layout.ts';
import { readCgroupProcesses } from '../../node/skiffd/cgroups/processes.ts';
import { needs } from '../support/prereq.ts';
import { until } from '../support/wait.ts';

/** x86-64's nanosleep and clock_nanosleep: `sleep` waits in one of them. */
const SLEEP_SYSCALLS = ['35', '230'];

test("a cgroup's processes: descriptors, sockets, thread states and limit; past a bound a count is left out, not short", async (t) => {
  if (!needs(t, { root: true, commands: ['python3', 'bash'] })) return;
  const parent = `/skiff-test-procs-${process.pid}`;
  const dir = (path: string) => {
    const d = controllerDir('pids', `${parent}/${path}`) ?? controllerDir('memory', `${parent}/${path}`);
    assert.ok(d, 'a pids or memory hierarchy');
    return d;
  };
  const made: string[] = [];
  const started: number[] = [];
  t.after(() => {
    for (const pid of started) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    // Deepest first, once their processes have gone.
    for (const d of made.reverse()) {
      for (let i = 0; i < 50; i++) {
        try {
          rmdirSync(d);
          break;
        } catch {
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
        }
      }
    }
  });
  const mkcg = (path: string) => {
    let at = '';
    for (const part of ['', ...path.split('/')]) {
      at = at ? `${at}/${part}` : part;
      const d = dir(at);
      try {
        mkdirSync(d);
        made.push(d);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
    }
  };
  /** `argv` started, waiting in its sleep, then moved into cgroup `path`. */
  const asleep = async (path: string, argv: string[]) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: 'ignore' });
    child.on('error', () => undefined);
    const pid = child.pid;
    assert.ok(pid);
    started.push(pid);
    // Sleeping in its syscall, past the dynamic loader (which holds a descriptor for a moment).
    await until(`${path}: the process to sleep`, async () => SLEEP_SYSCALLS.includes(readFileSync(`/proc/${pid}/syscall`, 'utf8').split(' ')[0]), 10_000);
    mkcg(path);
    writeFileSync(join(dir(path), 'cgroup.procs'), `${pid}\n`);
    return pid;
  };
  const read = (path: string) => readCgroupProcesses(`${parent}/${path}`, cgroupLayout());
  const fds = (pid: number) => BigInt(readdirSync(`/proc/${pid}/fd`).length);
  const sleeping = { running: 0n, sleeping: 1n, stopped: 0n, uninterruptible: 0n };

  const one = await asleep('plain', ['sleep', '600']);
  const plain = await read('plain');
  assert.ok(fds(one) >= 3n);
  assert.deepEqual(
    { ...plain, maxOpenFilesSoft: undefined },
    { processes: 1n, fileDescriptors: fds(one), sockets: 0n, threads: sleeping, maxOpenFilesSoft: undefined },
  );
  assert.ok((plain?.maxOpenFilesSoft ?? 0n) > 0n, 'the soft open-files limit');

  // Two sockets (a pair, inherited through exec).
  const paired = await asleep('sockets', [
    'python3',
    '-c',
    "import os, socket\nfor s in socket.socketpair(): os.set_inheritable(s.detach(), True)\nos.execvp('sleep', ['sleep', '600'])",
  ]);
  const withSockets = await read('sockets');
  assert.equal(withSockets?.sockets, 2n);
  assert.equal(withSockets?.fileDescriptors, fds(paired));

  // A descriptor at 17000 makes the process's table larger than the descriptors counted: the count is
  // left out, the threads are still counted.
  await asleep('many-fds', ['bash', '-c', 'ulimit -n 20000 && exec 17000</dev/null && exec sleep 600']);
  const many = await read('many-fds');
  assert.equal(many?.fileDescriptors, undefined);
  assert.equal(many?.sockets, undefined);
  assert.deepEqual(many?.threads, sleeping);

  // A pod: its containers' processes are in child cgroups, counted together.
  const a = await asleep('pod/a', ['sleep', '600']);
  const b = await asleep('pod/b', ['sleep', '600']);
  const pod = await read('pod');
  assert.equal(pod?.processes, 2n);
  assert.equal(pod?.fileDescriptors, fds(a) + fds(b));
  assert.equal(pod?.threads?.sleeping, 2n);

  // More child cgroups than are walked, and cgroups deeper than are walked: unknown, not short.
  for (let i = 0; i < 64; i++) mkcg(`wide/c${i}`);
  assert.equal(await read('wide'), undefined, '65 cgroups');
  await asleep('deep/a/b/c', ['sleep', '600']);
  assert.equal(await read('deep'), undefined, 'a process three levels down');
  assert.equal((await read('deep/a'))?.processes, 1n, 'two levels down is counted');
});
