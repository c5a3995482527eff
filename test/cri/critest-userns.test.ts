// critest 1.36's user namespace specs against skiffd: a pod in mode POD with the suite's mappings
// (it reads /proc/self/uid_map inside a container), mode NODE, and the four requests the suite expects
// refused. None may skip: the suite skips them all when the handler does not advertise the feature.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { needs, unavailable } from '../support/prereq.ts';
import { startSkiffd } from '../support/skiffd.ts';
import { createTestNetwork, freePort, skiffdNetworkConfig } from '../support/netns.ts';
import { describeFailures, kitMissing, runCritest, startKitRegistry } from '../support/cri-conformance.ts';

const USERNS_SPECS = [
  'runtime should support NamespaceMode_POD',
  'runtime should support NamespaceMode_NODE',
  'runtime should fail if more than one mapping provided',
  'runtime should fail if container ID 0 is not mapped',
  'runtime should fail with NamespaceMode_CONTAINER',
  'runtime should fail with NamespaceMode_TARGET',
];

test('critest 1.36: every user namespace spec runs and passes', { timeout: 15 * 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon', 'docker-registry', 'unshare', 'nsenter', 'perl', '/usr/lib/cni/bridge', '/usr/lib/cni/portmap'] }))
    return;
  const missing = kitMissing('1.36');
  if (missing) return unavailable(t, missing);

  const dir = mkdtempSync(join(tmpdir(), 'skiff-critest-userns-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const registry = await startKitRegistry(await freePort());
  t.after(() => registry.stop());
  const net = createTestNetwork(dir);
  t.after(() => net.cleanup());
  const d = await startSkiffd({ config: `${skiffdNetworkConfig(net)}\n${registry.mirrorsToml}\n` });
  t.after(() => d.cleanup());

  const run = await runCritest(d.socket, { version: '1.36', focus: 'UserNamespaces', timeoutMs: 10 * 60_000 });
  assert.ok(run.specs.length > 0, `critest wrote no report:\n${run.output.slice(-4000)}`);
  const ran = run.specs.filter((s) => s.state !== 'skipped');
  assert.deepEqual(
    ran.map((s) => s.leaf).sort(),
    [...USERNS_SPECS].sort(),
    `specs that did not run:\n${run.specs
      .filter((s) => s.state === 'skipped' && s.name.includes('UserNamespaces'))
      .map((s) => `- ${s.name}: ${s.message}`)
      .join('\n')}`,
  );
  const failed = ran.filter((s) => s.state !== 'passed');
  assert.deepEqual(
    failed.map((s) => s.leaf),
    [],
    `specs failed:\n${describeFailures(failed)}\n\nskiffd log tail:\n${d.logs().slice(-3000)}`,
  );
});
