// skiffd on a Debian node as our users run it: the kit's vm-v2.sh boots Debian 12's own kernel (cgroup
// v2 with every controller, AppArmor on) under QEMU with this host's files as its root, once with
// systemd as PID 1 and once without, and runs inside/node.test.ts there: skiffd's defaults pick the
// systemd driver on the first and cgroupfs on the second. Only what this host cannot show runs there
// (cgroup v2, systemd, AppArmor); the kubelet and cluster suites run on the host. QEMU emulates the
// CPU, so it boots on any machine and everything runs 30-40x slower than on the host, at a speed that
// moves with the machine: npm test runs these beside the host suite, not after it
// (scripts/run-tests.mjs), and every bound the harness waits with is stretched there (time-scale.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { build } from '../../scripts/build-skiffd.mjs';
import { kitDir, kitMissing } from '../support/cri-conformance.ts';
import { kubeBin } from '../support/kubelet-host.ts';
import { needs, unavailable } from '../support/prereq.ts';
import { repoRoot } from '../support/skiffd.ts';

const VM = join(kitDir, 'vm-v2.sh');
/** A whole guest run (boot, critest, the kubelet) is bounded; so is the test around it. */
const GUEST_TIMEOUT_MS = 40 * 60_000;
/** What runs on the node. */
const INSIDE = 'test/guest/inside/node.test.ts';
/**
 * How much the harness stretches its bounds there: the node is 30-40x slower than the host at CPU work,
 * but most of a wait is I/O and sleeping processes, and the suite's own bounds already allow for a slow node.
 */
const GUEST_TIME_SCALE = 4;

/** Boots the node and runs the inside suite; resolves with its exit status and everything it printed. */
/** What the emulated kernel prints when a CPU has spun in the kernel for over 20 s (its watchdog). */
const SOFT_LOCKUP = /watchdog: BUG: soft lockup - CPU#\d+ stuck for \d+s! \[[^\]]*\]/;

interface NodeRun {
  status: number | null;
  output: string;
  /** The guest's kernel locked up (and the guest was stopped a minute later, its traces printed). */
  lockedUp: boolean;
}

function runOnNode(options: { systemd: boolean; skiffdBin: string; out: string }): Promise<NodeRun> {
  // The guest has /tmp, /var/lib, /var/log, /root and /etc of its own: a checkout or kit there (a CI
  // clone under /tmp, a kit reached through a symlink) is shared in by its real path. The node gets a
  // disk first (node-disk.sh), and the tests keep their files on it, as on a Debian 12 node.
  const kit = realpathSync(kitDir);
  const inside = [
    join(repoRoot, 'test/guest/node-disk.sh'),
    `export TMPDIR=/var/tmp PATH=${dirname(process.execPath)}:$PATH SKIFFD_BIN=${options.skiffdBin} CI=${process.env.CI ?? ''} CRI_CONFORMANCE_DIR=${kit} SKIFF_TEST_TIME_SCALE=${GUEST_TIME_SCALE}`,
    `cd ${repoRoot}`,
    `exec node --import tsx --test --test-concurrency=1 --test-reporter=spec --test-timeout=2400000 ${INSIDE}`,
  ].join(' && ');
  const shares = [options.out, ...[repoRoot, kit].filter(guestHasItsOwn)].flatMap((dir) => ['--share', dir]);
  const args = [...(options.systemd ? ['--systemd'] : []), '--mem', options.systemd ? '6G' : '4G', ...shares, '--', 'bash', '-c', inside];
  return new Promise((resolve) => {
    // The guest takes this environment; node --test inside must not see itself as this run's child.
    const { NODE_TEST_CONTEXT: _child, ...env } = process.env;
    const child = spawn(VM, args, { cwd: options.out, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let lockedUp = false;
    const take = (d: Buffer) => {
      output += d.toString();
      if (output.length > 8 << 20) output = output.slice(-(4 << 20));
      if (!lockedUp && SOFT_LOCKUP.test(output)) {
        // A kernel that spins on every CPU does not come back: a minute for its traces, then the guest goes.
        lockedUp = true;
        setTimeout(() => child.kill('SIGTERM'), 60_000);
      }
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    // vm-v2.sh stops its guest when it is killed.
    const timer = setTimeout(() => {
      output += `\n(the node was stopped after ${GUEST_TIMEOUT_MS / 60_000} minutes)\n`;
      child.kill('SIGTERM');
    }, GUEST_TIMEOUT_MS);
    let settled = false;
    const settle = (status: number | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ status, output, lockedUp });
    };
    child.on('close', settle);
    // Something it started may hold its output open after it exits: what was read by then is the answer.
    child.on('exit', (status) => setTimeout(() => settle(status), 10_000));
  });
}

/** Whether `dir` lies where the guest has a directory of its own instead of the host's. */
function guestHasItsOwn(dir: string): boolean {
  return ['/tmp', '/var/lib', '/var/log', '/root', '/etc'].some((own) => dir === own || dir.startsWith(`${own}/`));
}

/**
 * The inside suite's tests that skip on a node, by name: the crun handler runs on the node with systemd
 * only. Any other skip, and any skip on the node with systemd, fails the run.
 */
const EXPECTED_SKIPS = (systemd: boolean): string[] =>
  systemd ? [] : ['critest 1.36 on the crun runtime handler: pods, containers, exec and attach under crun'];

/** The tests node's spec reporter marks skipped ("﹣ NAME (1.2ms) # REASON"). */
function skippedTests(output: string): string[] {
  return [...output.matchAll(/^\s*﹣ (.+) \([\d.]+m?s\) # .*$/gmu)].map((m) => m[1]);
}

/** The closing counts of node's spec reporter ("ℹ pass N"). */
function counts(output: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of output.matchAll(/^ℹ (tests|pass|fail|skipped|cancelled) (\d+)$/gm)) out[m[1]] = Number(m[2]);
  return out;
}

for (const systemd of [true, false]) {
  const name = systemd
    ? 'a Debian node booted with systemd (cgroup v2, AppArmor): the systemd driver'
    : 'a Debian node without systemd (cgroup v2, AppArmor): the cgroupfs driver';
  test(name, { timeout: 2 * GUEST_TIMEOUT_MS + 5 * 60_000 }, async (t) => {
    if (!needs(t, { root: true, commands: ['qemu-system-x86_64', 'busybox', 'depmod', 'apparmor_parser', 'sudo', 'runc', 'conmon', 'docker-registry'] }))
      return;
    const missing =
      kitMissing('1.36') ?? (existsSync(VM) ? undefined : `the kit has no ${VM}`) ?? (existsSync(kubeBin) ? undefined : `the kit has no ${kubeBin}`);
    if (missing) return unavailable(t, missing);
    const out = mkdtempSync(join(tmpdir(), 'skiff-debian-node-'));
    t.after(() => rmSync(out, { recursive: true, force: true }));
    // The bundle, as a node runs it: Node starts it in a second, where the sources through tsx take much longer there.
    const built = await build({ outdir: out, sea: false, quiet: true });
    const started = Date.now();
    let run = await runOnNode({ systemd, skiffdBin: built.cjs, out });
    if (run.lockedUp) {
      // The emulated node's kernel, not the suite, stopped: every CPU spinning in the kernel (seen with
      // runc and its init process). Said loudly, and the node booted once more; a second lock-up fails.
      const lines = run.output.split('\n').filter((l) => SOFT_LOCKUP.test(l));
      console.warn(`\n*** the Debian node's kernel locked up (${lines.length} watchdog reports); booting it once more. First: ${lines[0]} ***\n`);
      console.log(run.output.slice(-30_000));
      run = await runOnNode({ systemd, skiffdBin: built.cjs, out });
      assert.ok(!run.lockedUp, `the Debian node's kernel locked up twice in a row:\n${run.output.slice(-30_000)}`);
    }
    const c = counts(run.output);
    console.log(`${name}: ${c.pass ?? 0} passed, ${c.fail ?? 0} failed, ${c.skipped ?? 0} skipped in ${Math.round((Date.now() - started) / 1000)} s`);
    console.log(run.output.slice(-30_000));
    assert.equal(run.status, 0, `the suite on the node failed (status ${run.status}); its output is above`);
    assert.ok((c.tests ?? 0) >= 3 && c.fail === 0 && (c.cancelled ?? 0) === 0, `the suite on the node: ${JSON.stringify(c)}`);
    const skipped = skippedTests(run.output);
    assert.deepEqual(skipped, EXPECTED_SKIPS(systemd), 'the tests skipped on the node');
    assert.equal(c.skipped ?? 0, skipped.length, `every skip on the node is one of those: ${JSON.stringify(c)}`);
  });
}
