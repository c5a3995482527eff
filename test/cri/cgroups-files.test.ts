// Reading a cgroup's interface files: only regular files are read, so something planted where a
// cgroup file should be (a FIFO no one writes to) fails the read at once instead of blocking the daemon.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readText } from '../../node/skiffd/cgroups/files.ts';

test('cgroup files: a regular file is read, a missing one is undefined, a FIFO is refused at once', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-cgroup-files-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'cpu.stat'), 'usage_usec 12\n');
  assert.equal(await readText(join(dir, 'cpu.stat')), 'usage_usec 12\n');
  assert.equal(await readText(join(dir, 'memory.stat')), undefined);
  const fifo = join(dir, 'cpu.pressure');
  execFileSync('mkfifo', [fifo]);
  // The read is synchronous: a blocked one stops this process's timers too. A writer that comes after
  // 3 s bounds it, and a read that waited for it gets its bytes instead of the refusal.
  const writer = spawn('sh', ['-c', `sleep 3; echo planted > ${fifo}`], { stdio: 'ignore' });
  t.after(() => writer.kill());
  await assert.rejects(readText(fifo), /cpu\.pressure is not a regular file/);
});
