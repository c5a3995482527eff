// critest 1.36's image specs with the kit's images served over TLS by a registry whose certificate a
// throwaway CA signed, which skiffd trusts only through a containerd 2-style certs.d directory
// (`[registry] config_path`): each registry critest names has a hosts.toml whose pull/resolve host is the
// TLS registry, with the CA as that host's `ca`. No `[registry.mirrors]`, no insecure, no system trust.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { needs, unavailable } from '../support/prereq.ts';
import { startSkiffd } from '../support/skiffd.ts';
import { describeFailures, judgeCritest, kitMissing, OFFLINE_IMPOSSIBLE, runCritest, startKitRegistryTls } from '../support/cri-conformance.ts';

/** critest 1.36's image specs (its dry-run lists them), but the digest one no offline copy can pass. */
const IMAGE_SPECS = [
  'public image with tag should be pulled and removed [Conformance]',
  'public image should timeout if requested [Conformance]',
  'public image without tag should be pulled and removed [Conformance]',
  'image status should support all kinds of references [Conformance]',
  'image status get image fields should not have Uid|Username empty [Conformance]',
  'listImage should get exactly 3 image in the result list [Conformance]',
  'listImage should get exactly 3 repoTags in the result image [Conformance]',
  'removing image by one tag should remove all tags [Conformance]',
  'removing image from one registry should remove all tags from other registries [Conformance]',
  'should return the same image identifier across all APIs [Conformance]',
  'should return the same image identifier when pulled from different registries [Conformance]',
  'should not list or get image status immediately after removal [Conformance]',
  'should list and get image status immediately after pulling [Conformance]',
  'should not fail on simultaneous RemoveImage calls [Conformance]',
];

test('critest 1.36: the image specs pass with every image pulled over TLS, trusted through certs.d', { timeout: 10 * 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon', 'docker-registry', 'openssl', 'tar'] })) return;
  const missing = kitMissing('1.36');
  if (missing) return unavailable(t, missing);

  const dir = mkdtempSync(join(tmpdir(), 'skiff-critest-tls-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const registry = await startKitRegistryTls();
  t.after(() => registry.stop());
  const certsD = registry.hostsDir(join(dir, 'certs.d'));
  const d = await startSkiffd({ config: `[registry]\nconfig_path = ${JSON.stringify(certsD)}\n` });
  t.after(() => d.cleanup());

  const run = await runCritest(d.socket, {
    version: '1.36',
    focus: 'Image Manager|Image Identifier Consistency|Image Consistency',
    timeoutMs: 8 * 60_000,
  });
  const ran = run.specs.filter((s) => s.state !== 'skipped');
  console.log(`critest (image specs over TLS): ${ran.filter((s) => s.state === 'passed').length} of ${ran.length} passed (exit ${run.code})`);
  const v = judgeCritest(ran, { appArmorEnabled: false });
  assert.deepEqual(
    v.failed.map((s) => s.name),
    [],
    `specs failed:\n${describeFailures(v.failed)}\n\nskiffd log tail:\n${d.logs().slice(-3000)}`,
  );
  // By name: a renamed or unfocused spec must not pass this by running nothing.
  assert.deepEqual(v.passed.map((s) => s.leaf).sort(), [...IMAGE_SPECS].sort(), `critest output tail:\n${run.output.slice(-3000)}`);
  assert.ok(v.digest?.leaf.startsWith(OFFLINE_IMPOSSIBLE), 'the digest spec ran and failed only on its pull');
  assert.equal(ran.length, IMAGE_SPECS.length + 1);
});
