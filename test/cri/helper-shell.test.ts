// The helper shells that run skiffd's short commands must behave like a spawn: arguments reach the
// program unchanged, stdout and stderr stay apart, exit codes and signals come back, input and added
// variables arrive, a hung command is killed at its deadline without poisoning later calls, and a
// missing program is an ENOENT rejection.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { execCommand, runCommand } from '../../node/skiffd/util/command.ts';

/** The helper shells this process runs now (its children named skiffd-helper). */
function helperCount(): number {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        return ppid === process.pid && readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('skiffd-helper');
      } catch {
        return false;
      }
    }).length;
}

test('helper shell: arguments, stdout/stderr, exit codes and signals come back as from a spawn', async () => {
  const args = ['a b', '', 'x\\y', ' lead', 'trail ', '$HOME', '"q"', "'s'", '*', '-n'];
  const echo = await runCommand('/usr/bin/printf', ['%s|', ...args], { timeoutMs: 10_000 });
  assert.deepEqual(echo, { code: 0, signal: null, stdout: args.map((a) => `${a}|`).join(''), stderr: '' });

  const both = await runCommand('sh', ['-c', 'echo out; echo err >&2; printf tail; exit 3'], { timeoutMs: 10_000 });
  assert.deepEqual(both, { code: 3, signal: null, stdout: 'out\ntail', stderr: 'err\n' });

  const killed = await runCommand('sh', ['-c', 'kill -TERM $$'], { timeoutMs: 10_000 });
  assert.equal(killed.code, null);
  assert.equal(killed.signal, 'SIGTERM');

  // The calls above went through a helper shell, a child of this process, not a spawn each.
  const helpers = helperCount();
  assert.ok(helpers >= 1 && helpers <= 4, `one to four helper shells run (found ${helpers})`);

  // An argument with a newline cannot go through the helper protocol: it is spawned and still arrives intact.
  const multi = await runCommand('/usr/bin/printf', ['%s', 'one\ntwo'], { timeoutMs: 10_000 });
  assert.equal(multi.stdout, 'one\ntwo');
});

test('helper shell: input and added environment variables reach the program', async () => {
  const input = JSON.stringify({ cniVersion: '1.0.0', text: 'line\nbreak', list: [1, 2] });
  const out = await execCommand('sh', ['-c', 'printf "%s|%s|" "$CNI_COMMAND" "$CNI_NETNS"; cat'], {
    timeoutMs: 10_000,
    input,
    extraEnv: { CNI_COMMAND: 'ADD', CNI_NETNS: '' },
  });
  assert.equal(out.code, 0, out.stderr);
  assert.equal(out.stdout, `ADD||${input}`, 'the input arrives exactly, with no newline added');
  assert.equal(JSON.parse(out.stdout.slice('ADD||'.length)).text, 'line\nbreak');
});

test('helper shell: a hung command is killed at its deadline and later calls still work', { timeout: 60_000 }, async () => {
  // sleep 600 outlives the test's own bound: only the deadline's kill can end it, with a non-zero status.
  const hung = await execCommand('sleep', ['600'], { timeoutMs: 300 });
  assert.equal(hung.timedOut, true);
  assert.notEqual(hung.code, 0, 'the deadline ended the call');
  const after = await execCommand('echo', ['still fine'], { timeoutMs: 10_000 });
  assert.deepEqual([after.code, after.stdout], [0, 'still fine\n']);
});

test('helper shell: a missing program rejects with ENOENT, with or without added variables', async () => {
  await assert.rejects(runCommand('/nonexistent/skiff-tool', [], { timeoutMs: 10_000 }), { code: 'ENOENT' });
  await assert.rejects(execCommand('/nonexistent/cni-plugin', [], { timeoutMs: 10_000, input: '{}', extraEnv: { CNI_COMMAND: 'ADD' } }), { code: 'ENOENT' });
});

test('helper shell: more calls at once than helpers all complete with their own output', async () => {
  const results = await Promise.all(
    Array.from({ length: 12 }, (_, i) => runCommand('sh', ['-c', `sleep 0.1; echo ${i}; echo e${i} >&2`], { timeoutMs: 10_000 })),
  );
  assert.deepEqual(
    results.map((r) => [r.code, r.stdout, r.stderr]),
    Array.from({ length: 12 }, (_, i) => [0, `${i}\n`, `e${i}\n`]),
  );
});

test('helper shell: a burst of concurrent commands gets more shells, which leave once idle', { timeout: 120_000 }, async () => {
  // Twelve commands at once, each holding its shell until all have started: a spawn each is what the shells spare.
  const barrier = `/tmp/skiff-helper-burst-${process.pid}`;
  const burst = Array.from({ length: 12 }, (_, i) =>
    runCommand(
      'sh',
      ['-c', `touch ${barrier}.${i}; i=0; while [ $(ls ${barrier}.* | wc -l) -lt 12 ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done; echo $PPID`],
      {
        timeoutMs: 30_000,
      },
    ),
  );
  const results = await Promise.all(burst);
  const { rmSync } = await import('node:fs');
  for (let i = 0; i < 12; i++) rmSync(`${barrier}.${i}`, { force: true });
  const parents = new Set(results.map((r) => r.stdout.trim()));
  assert.ok(results.every((r) => r.code === 0));
  assert.ok(!parents.has(String(process.pid)), 'no command of the burst was spawned by the daemon itself');
  assert.ok(parents.size > 4 && parents.size <= 12, `the burst ran in ${parents.size} shells`);
  assert.ok(helperCount() <= 16, 'never more than 16 shells');
  // The surge shells leave after 20 s idle; the base set of four stays.
  const deadline = Date.now() + 60_000;
  while (helperCount() > 4) {
    assert.ok(Date.now() < deadline, `still ${helperCount()} helper shells 60 s after the burst`);
    await new Promise((r) => setTimeout(r, 500));
  }
  assert.ok(helperCount() >= 1, 'the base shells stay');
});
