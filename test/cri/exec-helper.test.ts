// The exec helper runs ExecSync's `runc exec` without forking the daemon. It must behave like a spawn
// of its own: arguments unchanged, stdout and stderr apart, the exit status (128 + signal for a
// signal), output cut at the limit, many commands at once each with its own output, the command's pid
// reported (a timeout kills by it), and calls in flight fail, not hang, when the helper dies.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExecHelper } from '../../node/skiffd/oci/exec-helper.ts';
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
