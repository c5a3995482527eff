// skiffd on a Debian 12 node without systemd: the kit's vm-v2.sh boots Debian 12's own kernel (cgroup v2
// with every controller, AppArmor on) under QEMU with this host's files as its root and a shell as PID 1,
// and runs inside/node.test.ts there: skiffd's defaults pick the cgroupfs driver. The node booted with
// systemd is Debian 13's (trixie-node.test.ts). Only what this host cannot show runs there (cgroup v2,
// AppArmor); the kubelet and cluster suites run on the host. QEMU emulates the CPU, so it boots on any
// machine and everything runs 30-40x slower than on the host, at a speed that moves with the machine: npm
// test runs these beside the host suite, not after it (scripts/run-tests.mjs), and every bound the harness
// waits with is stretched there (time-scale.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { build } from '../../scripts/build-skiffd.mjs';
import { kitDir, kitMissing } from '../support/cri-conformance.ts';
import {
  counts,
  GUEST_TIME_SCALE,
  GUEST_TIMEOUT_MS,
  insideCommand,
  runOnNode,
  runOnNodeAllowingOneKernelFailure,
  skippedTests,
} from '../support/guest-node.ts';
import { kubeBin } from '../support/kubelet-host.ts';
import { needs, unavailable } from '../support/prereq.ts';
import { repoRoot } from '../support/skiffd.ts';

const VM = join(kitDir, 'vm-v2.sh');

/** Whether `dir` lies where the guest has a directory of its own instead of the host's. */
function guestHasItsOwn(dir: string): boolean {
  return ['/tmp', '/var/lib', '/var/log', '/root', '/etc'].some((own) => dir === own || dir.startsWith(`${own}/`));
}

/** The inside suite's tests that skip here: the crun handler runs on the node booted with systemd. Any other skip fails the run. */
const EXPECTED_SKIPS = ['critest 1.36 on the crun runtime handler: pods, containers, exec and attach under crun'];

const name = 'a Debian 12 node without systemd (cgroup v2, AppArmor): the cgroupfs driver';
test(name, { timeout: 2 * GUEST_TIMEOUT_MS + 5 * 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['qemu-system-x86_64', 'busybox', 'depmod', 'apparmor_parser', 'sudo', 'runc', 'conmon', 'docker-registry'] })) return;
  const missing =
    kitMissing('1.36') ?? (existsSync(VM) ? undefined : `the kit has no ${VM}`) ?? (existsSync(kubeBin) ? undefined : `the kit has no ${kubeBin}`);
  if (missing) return unavailable(t, missing);
  const out = mkdtempSync(join(tmpdir(), 'skiff-debian-node-'));
  t.after(() => rmSync(out, { recursive: true, force: true }));
  // The bundle, as a node runs it: Node starts it in a second, where the sources through tsx take much longer there.
  const built = await build({ outdir: out, sea: false, quiet: true });
  // The guest has /tmp, /var/lib, /var/log, /root and /etc of its own: a checkout or kit there (a CI
  // clone under /tmp, a kit reached through a symlink) is shared in by its real path. The node gets a
  // disk first (node-disk.sh), and the tests keep their files on it, as on a Debian 12 node.
  const kit = realpathSync(kitDir);
  const inside = insideCommand({
    prepare: [join(repoRoot, 'test/guest/node-disk.sh')],
    env: {
      TMPDIR: '/var/tmp',
      PATH: `${dirname(process.execPath)}:$PATH`,
      SKIFFD_BIN: built.cjs,
      CI: process.env.CI ?? '',
      CRI_CONFORMANCE_DIR: kit,
      SKIFF_TEST_TIME_SCALE: String(GUEST_TIME_SCALE),
    },
    repoRoot,
  });
  const shares = [out, ...[repoRoot, kit].filter(guestHasItsOwn)].flatMap((dir) => ['--share', dir]);
  const started = Date.now();
  const run = await runOnNodeAllowingOneKernelFailure('the Debian 12 node', () => runOnNode(VM, ['--mem', '4G', ...shares, '--', 'bash', '-c', inside], out));
  const c = counts(run.output);
  console.log(`${name}: ${c.pass ?? 0} passed, ${c.fail ?? 0} failed, ${c.skipped ?? 0} skipped in ${Math.round((Date.now() - started) / 1000)} s`);
  console.log(run.output.slice(-30_000));
  assert.equal(run.status, 0, `the suite on the node failed (status ${run.status}); its output is above`);
  assert.ok((c.tests ?? 0) >= 3 && c.fail === 0 && (c.cancelled ?? 0) === 0, `the suite on the node: ${JSON.stringify(c)}`);
  const skipped = skippedTests(run.output);
  assert.deepEqual(skipped, EXPECTED_SKIPS, 'the tests skipped on the node');
  assert.equal(c.skipped ?? 0, skipped.length, `every skip on the node is one of those: ${JSON.stringify(c)}`);
});
