// Counting a cgroup's processes from /proc (file descriptors, sockets, thread states, the open-files
// limit) for the cAdvisor-style metrics, and the bounds that keep a container from making the count
// expensive: real processes, listed in a cgroup.procs of a tree made here (no cgroup is created).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CgroupLayout } from '../../node/skiffd/cgroups/layout.ts';
import { readCgroupProcesses } from '../../node/skiffd/cgroups/processes.ts';
import { until } from '../support/wait.ts';

test("a cgroup's processes: descriptors, sockets, thread states and limit; past a bound a count is left out, not short", async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'skiff-cgroup-procs-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const layout: CgroupLayout = { mode: 'v1', v1: new Map([['pids', { mountPoint: root, root: '/' }]]), unifiedControllers: new Set() };
  const started: number[] = [];
  t.after(() => {
    for (const pid of started) process.kill(pid, 'SIGKILL');
  });
  /** A process that is asleep once it has run `script`, listed in cgroup `path`. */
  const sleeper = async (path: string, script = '') => {
    const child = spawn('bash', ['-c', `${script} exec sleep 600`], { stdio: 'ignore' });
    const pid = child.pid;
    assert.ok(pid);
    started.push(pid);
    await until(`${path}: sleep to be running`, async () => readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'sleep', 10_000);
    mkdirSync(join(root, path), { recursive: true });
    writeFileSync(join(root, path, 'cgroup.procs'), `${pid}\n`);
    return pid;
  };

  // A sleeping process, with stdin, stdout and stderr at least.
  const fds = (pid: number) => BigInt(readdirSync(`/proc/${pid}/fd`).length);
  const one = await sleeper('plain');
  const plain = await readCgroupProcesses('/plain', layout);
  assert.ok(fds(one) >= 3n);
  assert.deepEqual(
    { ...plain, maxOpenFilesSoft: undefined },
    {
      processes: 1n,
      fileDescriptors: fds(one),
      sockets: 0n,
      threads: { running: 0n, sleeping: 1n, stopped: 0n, uninterruptible: 0n },
      maxOpenFilesSoft: undefined,
    },
  );
  assert.ok((plain?.maxOpenFilesSoft ?? 0n) > 0n, 'the soft open-files limit');

  // Two sockets (a pair, inherited through exec).
  const paired = spawn(
    'python3',
    ['-c', "import os, socket\nfor s in socket.socketpair(): os.set_inheritable(s.detach(), True)\nos.execvp('sleep', ['sleep', '600'])"],
    { stdio: 'ignore' },
  );
  assert.ok(paired.pid);
  started.push(paired.pid);
  await until('the socket pair holder to sleep', async () => readFileSync(`/proc/${paired.pid}/comm`, 'utf8').trim() === 'sleep', 10_000);
  mkdirSync(join(root, 'sockets'));
  writeFileSync(join(root, 'sockets', 'cgroup.procs'), `${paired.pid}\n`);
  const withSockets = await readCgroupProcesses('/sockets', layout);
  assert.equal(withSockets?.sockets, 2n);
  assert.equal(withSockets?.fileDescriptors, fds(paired.pid));

  // A descriptor at 17000 makes the process's table larger than the descriptors counted: the count is
  // left out, the threads are still counted.
  await sleeper('many-fds', 'ulimit -n 20000 && exec 17000</dev/null &&');
  const many = await readCgroupProcesses('/many-fds', layout);
  assert.equal(many?.fileDescriptors, undefined);
  assert.equal(many?.sockets, undefined);
  assert.deepEqual(many?.threads, { running: 0n, sleeping: 1n, stopped: 0n, uninterruptible: 0n });

  // A pod: its containers' processes are in child cgroups, counted together.
  const a = await sleeper('pod/a');
  const b = await sleeper('pod/b');
  writeFileSync(join(root, 'pod', 'cgroup.procs'), '');
  const pod = await readCgroupProcesses('/pod', layout);
  assert.equal(pod?.processes, 2n);
  assert.equal(pod?.fileDescriptors, fds(a) + fds(b));
  assert.equal(pod?.threads?.sleeping, 2n);

  // More child cgroups than are walked, and cgroups deeper than are walked: unknown, not short.
  mkdirSync(join(root, 'wide'));
  writeFileSync(join(root, 'wide', 'cgroup.procs'), '');
  for (let i = 0; i < 64; i++) mkdirSync(join(root, 'wide', `c${i}`));
  assert.equal(await readCgroupProcesses('/wide', layout), undefined, '65 cgroups');
  await sleeper('deep/a/b/c');
  for (const p of ['deep', 'deep/a', 'deep/a/b']) writeFileSync(join(root, p, 'cgroup.procs'), '');
  assert.equal(await readCgroupProcesses('/deep', layout), undefined, 'a process three levels down');
  assert.equal((await readCgroupProcesses('/deep/a', layout))?.processes, 1n, 'two levels down is counted');

  // A listed pid that is gone counts for nothing.
  mkdirSync(join(root, 'gone'));
  writeFileSync(join(root, 'gone', 'cgroup.procs'), '999999999\n');
  assert.equal((await readCgroupProcesses('/gone', layout))?.processes, 0n);
});
