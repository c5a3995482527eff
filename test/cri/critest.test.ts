// The field's own judge as the gate: critest 1.36, the CRI validation suite of the cri-tools release
// paired with Kubernetes 1.36, against the built skiffd (dist/skiffd.cjs), with every image it pulls
// served by a local docker-registry. Every spec must pass except the digest spec no offline copy can
// pass and the AppArmor specs on a host with AppArmor off, and no spec may skip because skiffd does not
// advertise a feature. Then the pod, container and streaming specs against the single executable, and
// the one spec critest 1.29 has that later releases dropped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from '../../scripts/build-skiffd.mjs';
import { needs, unavailable } from '../support/prereq.ts';
import { startSkiffd } from '../support/skiffd.ts';
import { createTestNetwork, freePort, skiffdNetworkConfig } from '../support/netns.ts';
import {
  APPARMOR_OFF_REASON,
  appArmorSpecs,
  describeFailures,
  describeSkips,
  hostAppArmorEnabled,
  judgeCritest,
  kitMissing,
  OFFLINE_IMPOSSIBLE,
  runCritest,
  startKitRegistry,
  type CritestRun,
  type SpecResult,
} from '../support/cri-conformance.ts';

/** Specs in critest 1.36 (benchmarks included); a report with fewer means critest did not run them all. */
const SPECS_IN_SUITE = 122;

function summary(run: CritestRun): string {
  const count = (state: string) => run.specs.filter((s) => s.state === state).length;
  return `critest: ${count('passed')} passed, ${run.specs.filter((s) => s.state !== 'passed' && s.state !== 'skipped').length} failed, ${count('skipped')} skipped (exit ${run.code}${run.timedOut ? ', timed out' : ''})`;
}

const spec = (name: string, state: string, message = ''): SpecResult => ({
  name: `[k8s.io] ${name}`,
  leaf: name.split(' ').slice(-3).join(' '),
  state,
  message,
});

test('the gate refuses a skip for a missing feature and accepts only the reasons it names', () => {
  const digest: SpecResult = {
    name: `[k8s.io] Image Manager ${OFFLINE_IMPOSSIBLE} [Conformance]`,
    leaf: `${OFFLINE_IMPOSSIBLE} [Conformance]`,
    state: 'failed',
    message: 'failed to pull image: MANIFEST_UNKNOWN',
  };
  const specs = [
    spec('Idempotence StopContainer should not return an error if not found', 'passed'),
    digest,
    spec('AppArmor runtime should support apparmor field should work with apparmor profile', 'skipped', APPARMOR_OFF_REASON),
    spec('Image benchmark about operations on Image benchmark about listing Image', 'skipped'),
    // What critest 1.32 said of skiffd before it advertised these features:
    spec(
      'Security Context UserNamespaces when Host idmap mount support is not needed runtime should support NamespaceMode_NODE',
      'skipped',
      'no runtime handler found which supports user namespaces',
    ),
    spec(
      'Security Context SupplementalGroupsPolicy when SupplementalGroupsPolicy=Strict even if ...',
      'skipped',
      'The runtime does not support SupplementalGroupsPolicy feature',
    ),
    spec(
      'Container Mount Readonly runtime should support readonly mounts should support recursive readonly mounts',
      'skipped',
      'runtime does not implement recursive readonly mounts',
    ),
  ];
  const v = judgeCritest(specs, { appArmorEnabled: false });
  assert.equal(v.digest, digest);
  assert.deepEqual(
    v.skipped.map((s) => s.message),
    [
      'no runtime handler found which supports user namespaces',
      'The runtime does not support SupplementalGroupsPolicy feature',
      'runtime does not implement recursive readonly mounts',
    ],
  );
  assert.deepEqual([v.passed.length, v.failed.length, v.appArmorOff.length, v.benchmarks.length], [1, 0, 1, 1]);
  // With AppArmor on, its skip is refused too.
  assert.equal(judgeCritest(specs, { appArmorEnabled: true }).skipped.length, 4);
  // The digest spec failing for another reason than the pull is a failure.
  assert.equal(judgeCritest([{ ...digest, message: 'image status mismatch' }], { appArmorEnabled: false }).failed.length, 1);
});

test('critest 1.36 against the built skiffd', { timeout: 30 * 60_000 }, async (t) => {
  if (
    !needs(t, {
      root: true,
      commands: ['runc', 'conmon', 'docker-registry', 'curl', 'unshare', 'nsenter', 'perl', '/usr/lib/cni/bridge', '/usr/lib/cni/portmap'],
    })
  )
    return;
  const missing = kitMissing('1.36') ?? kitMissing('1.29');
  if (missing) return unavailable(t, missing);

  const dir = mkdtempSync(join(tmpdir(), 'skiff-critest-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const built = await build({ outdir: join(dir, 'dist'), quiet: true });
  const registry = await startKitRegistry(await freePort());
  t.after(() => registry.stop());

  const daemon = async (command: string[]) => {
    const net = createTestNetwork(mkdtempSync(join(dir, 'net-')));
    const d = await startSkiffd({ command, config: `${skiffdNetworkConfig(net)}\n${registry.mirrorsToml}\n` });
    return {
      d,
      async stop() {
        await d.cleanup();
        await net.cleanup();
      },
    };
  };

  await t.test(
    'dist/skiffd.cjs: every spec passes but the offline digest spec and AppArmor on a host without it; none skips for a missing feature',
    async () => {
      const { d, stop } = await daemon([process.execPath, built.cjs]);
      t.after(stop);
      const run = await runCritest(d.socket, { version: '1.36', timeoutMs: 20 * 60_000 });
      console.log(summary(run));
      assert.equal(run.specs.length, SPECS_IN_SUITE, `critest reported ${run.specs.length} specs, not ${SPECS_IN_SUITE}:\n${run.output.slice(-4000)}`);
      const appArmorEnabled = hostAppArmorEnabled();
      const v = judgeCritest(run.specs, { appArmorEnabled });
      const logTail = `\n\nskiffd log tail:\n${d.logs().slice(-3000)}`;
      assert.deepEqual(
        v.failed.map((s) => s.name),
        [],
        `specs failed:\n${describeFailures(v.failed)}${logTail}`,
      );
      assert.deepEqual(
        v.skipped.map((s) => s.name),
        [],
        `specs skipped, most likely for a feature skiffd does not advertise:\n${describeSkips(v.skipped)}`,
      );
      // The AppArmor specs are let off only because the host cannot load profiles, and then all of them.
      if (!appArmorEnabled) assert.deepEqual(v.appArmorOff, appArmorSpecs(run.specs), 'every AppArmor spec skipped for the host reason');
      assert.equal(v.benchmarks.length, 5, `benchmark specs left out:\n${describeSkips(v.benchmarks)}`);
      const accepted = v.appArmorOff.length + v.benchmarks.length + (v.digest ? 1 : 0);
      assert.equal(v.passed.length, run.specs.length - accepted);
    },
  );

  await t.test('dist/skiffd (single executable) passes the pod, container, exec, attach and port-forward specs', async () => {
    assert.ok(built.sea, 'the single executable was built');
    const { d, stop } = await daemon([built.sea]);
    t.after(stop);
    const run = await runCritest(d.socket, {
      version: '1.36',
      focus: 'PodSandbox runtime should support basic|Container runtime should support basic|Streaming',
      timeoutMs: 10 * 60_000,
    });
    const failed = run.specs.filter((s) => s.state !== 'passed' && s.state !== 'skipped');
    const ran = run.specs.filter((s) => s.state !== 'skipped');
    console.log(summary(run));
    assert.deepEqual(
      failed.map((s) => s.name),
      [],
      `specs failed:\n${describeFailures(failed)}\n\nskiffd log tail:\n${d.logs().slice(-3000)}`,
    );
    // The focus must have hit what it names, or a renamed spec would pass this by running nothing.
    for (const part of ['running PodSandbox', 'stopping container', 'execSync with timeout', 'exec with tty=true', 'attach', 'portforward']) {
      assert.ok(
        ran.some((s) => s.leaf.includes(part) && s.state === 'passed'),
        `no passing spec matched "${part}"`,
      );
    }
  });

  await t.test("critest 1.29's one spec that 1.32 and later replaced (image groups of the user) passes against dist/skiffd.cjs", async () => {
    const { d, stop } = await daemon([process.execPath, built.cjs]);
    t.after(stop);
    const run = await runCritest(d.socket, {
      version: '1.29',
      focus: 'Security Context bucket if the container.s primary UID belongs to some groups',
      timeoutMs: 5 * 60_000,
    });
    console.log(summary(run));
    const ran = run.specs.filter((s) => s.state !== 'skipped');
    assert.deepEqual(
      ran.map((s) => [s.leaf, s.state, s.message.split('\n')[0]]),
      [["if the container's primary UID belongs to some groups in the image, runtime should add SupplementalGroups to them", 'passed', '']],
    );
  });
});
