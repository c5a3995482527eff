// skiffd on the node a new Debian install is today: Debian 13 "trixie" booted by trixie-node.sh from a
// root file system of trixie's own packages (kernel 6.12, systemd as PID 1, cgroup v2, AppArmor 4.1
// enforcing, trixie's runc, crun and conmon) under QEMU, with this checkout, the kit and this Node shared
// in. inside/node.test.ts runs there as on the Debian 12 node (debian-node.test.ts): skiffd's defaults
// pick the systemd driver; critest, the crun handler, the seccomp probes, AppArmor and the kubelet. The
// node is built once per set of trixie's package versions and cached (trixie-node.sh).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { build } from '../../scripts/build-skiffd.mjs';
import { containerdBinary, CONTAINERD2_HINT } from '../../bench/cri/containerd-peer.ts';
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
import { buildSeccompProbe } from '../support/seccomp-probe.ts';
import { repoRoot } from '../support/skiffd.ts';

const NODE = join(repoRoot, 'test/guest/trixie-node.sh');

const name = 'a Debian 13 node booted with systemd (kernel 6.12, cgroup v2, AppArmor 4.1): the systemd driver, runc and crun';
test(name, { timeout: 2 * GUEST_TIMEOUT_MS + 30 * 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['qemu-system-x86_64', 'mmdebstrap', 'mkfs.ext4', 'gcc'] })) return;
  const missing = kitMissing('1.36') ?? (existsSync(kubeBin) ? undefined : `the kit has no ${kubeBin}`);
  if (missing) return unavailable(t, missing);
  // containerd 2.1, the reference the node's kubelet test compares skiffd with: fetched here (the node has
  // no network) into the kit's cache, and its binaries shared in.
  const containerd = containerdBinary('2.1');
  if (!containerd) return unavailable(t, `containerd 2.1 could not be brought here: ${CONTAINERD2_HINT}`);
  const out = mkdtempSync(join(tmpdir(), 'skiff-trixie-node-'));
  t.after(() => rmSync(out, { recursive: true, force: true }));
  // The bundle, as a node runs it: Node starts it in a second, where the sources through tsx take much longer there.
  const built = await build({ outdir: out, sea: false, quiet: true });
  // The node has no compiler: the seccomp probe is built here and put where the suite there looks for it.
  const probe = await buildSeccompProbe();
  cpSync(probe, join(out, basename(probe)), { recursive: true });
  // The node's files are its own: this checkout, the kit, this Node build and the bundle are shared in
  // at their real paths (and the checkout's node_modules, when it is a link to elsewhere).
  const kit = realpathSync(kitDir);
  const nodeHome = dirname(dirname(realpathSync(process.execPath)));
  const modules = realpathSync(join(repoRoot, 'node_modules'));
  const dirs = [out, repoRoot, kit, nodeHome, dirname(containerd), ...(modules.startsWith(`${repoRoot}/`) ? [] : [modules])];
  const inside = insideCommand({
    prepare: [`cp -a ${join(out, basename(probe))} /var/tmp/`],
    env: {
      TMPDIR: '/var/tmp',
      PATH: `${join(nodeHome, 'bin')}:$PATH`,
      SKIFFD_BIN: built.cjs,
      CI: process.env.CI ?? '',
      CRI_CONFORMANCE_DIR: kit,
      SKIFF_CONTAINERD2_DIR: dirname(containerd),
      SKIFF_TEST_TIME_SCALE: String(GUEST_TIME_SCALE),
    },
    repoRoot,
  });
  // The first run on a machine builds the node (mmdebstrap): timed apart from the suite.
  const buildStarted = Date.now();
  const prepared = await runOnNode(NODE, ['--build'], out);
  assert.equal(prepared.status, 0, `trixie-node.sh --build failed:\n${prepared.output.slice(-10_000)}`);
  console.log(
    `the Debian 13 node was ready in ${Math.round((Date.now() - buildStarted) / 1000)} s${/building the node/.test(prepared.output) ? ' (built now)' : ' (cached)'}`,
  );
  const started = Date.now();
  const run = await runOnNodeAllowingOneKernelFailure('the Debian 13 node', () =>
    runOnNode(NODE, ['--mem', '6G', ...dirs.flatMap((d) => ['--share', d]), '--', 'bash', '-c', inside], out),
  );
  const c = counts(run.output);
  console.log(`${name}: ${c.pass ?? 0} passed, ${c.fail ?? 0} failed, ${c.skipped ?? 0} skipped in ${Math.round((Date.now() - started) / 1000)} s`);
  console.log(run.output.slice(-30_000));
  assert.equal(run.status, 0, `the suite on the node failed (status ${run.status}); its output is above`);
  assert.ok((c.tests ?? 0) >= 3 && c.fail === 0 && (c.cancelled ?? 0) === 0, `the suite on the node: ${JSON.stringify(c)}`);
  assert.deepEqual(skippedTests(run.output), [], 'no test skips on the Debian 13 node');
  assert.equal(c.skipped ?? 0, 0, `nothing skipped: ${JSON.stringify(c)}`);
});
