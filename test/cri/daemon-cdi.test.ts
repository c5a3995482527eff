// CDI through the daemon: [cdi] spec_dirs from the TOML, Status saying what is in force, a device
// applied on CreateContainer, and each refusal reaching the client with its gRPC code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Status } from 'nice-grpc';
import { NamespaceMode } from '../../proto/gen/runtime/v1/api.ts';
import { kitMissing, startKitRegistry } from '../support/cri-conformance.ts';
import { freePort } from '../support/netns.ts';
import { grpcCode, podConfig } from '../support/pods.ts';
import { needs, unavailable } from '../support/prereq.ts';
import { startSkiffd } from '../support/skiffd.ts';

const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';

test('CDI through the daemon: config, Status, a device applied, refusals with their codes', { timeout: 120_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon', 'docker-registry'] })) return;
  const missing = kitMissing('1.36');
  if (missing) return unavailable(t, missing);
  const specDir = mkdtempSync(join(tmpdir(), 'skiff-cdi-d-'));
  t.after(() => rmSync(specDir, { recursive: true, force: true }));
  writeFileSync(
    join(specDir, 'example.yaml'),
    'cdiVersion: 0.5.0\nkind: example.com/gpu\ndevices:\n  - name: gpu0\n    containerEdits:\n      env: [EXAMPLE_GPU=0]\n      deviceNodes: [{path: /dev/example-gpu0, hostPath: /dev/null}]\n',
  );
  writeFileSync(join(specDir, 'broken.json'), '{"cdiVersion": "0.5.0", "kind": "other.com/nic", "devices": [');
  const registry = await startKitRegistry(await freePort());
  t.after(() => registry.stop());
  const d = await startSkiffd({ config: `${registry.mirrorsToml}\n[cdi]\nspec_dirs = [${JSON.stringify(specDir)}]\n` });
  t.after(() => d.cleanup());
  const info = (await d.runtime.status({ verbose: true })).info;
  assert.deepEqual(JSON.parse(info.cdi), { enabled: true, specDirs: [specDir] });

  await d.images.pullImage({ image: { image: BUSYBOX } });
  const sandboxConfig = podConfig('cdi', { network: NamespaceMode.NODE });
  const { podSandboxId } = await d.runtime.runPodSandbox({ config: sandboxConfig });
  const create = (name: string, devices: string[]) =>
    d.runtime.createContainer({
      podSandboxId,
      sandboxConfig,
      config: { metadata: { name }, image: { image: BUSYBOX }, command: ['sleep', '3600'], CDIDevices: devices.map((n) => ({ name: n })) },
    });
  const { containerId } = await create('gpu', ['example.com/gpu=gpu0']);
  await d.runtime.startContainer({ containerId });
  const out = (await d.runtime.execSync({ containerId, cmd: ['sh', '-c', 'test -c /dev/example-gpu0 && echo $EXAMPLE_GPU'], timeout: 10n })).stdout.toString();
  assert.equal(out.trim(), '0');

  const unknown = await grpcCode(create('unknown', ['example.com/gpu=gpu9']));
  assert.equal(unknown.code, Status.FAILED_PRECONDITION);
  assert.match(unknown.details, /no CDI spec on this node defines the device example\.com\/gpu=gpu9.*broken\.json: not valid JSON/);
  const malformed = await grpcCode(create('malformed', ['gpu0']));
  assert.equal(malformed.code, Status.INVALID_ARGUMENT);
  assert.match(malformed.details, /config\.CDI_devices\[0\]\.name: "gpu0" is not a qualified CDI device name/);
  await d.runtime.stopPodSandbox({ podSandboxId });
  await d.runtime.removePodSandbox({ podSandboxId });
});
