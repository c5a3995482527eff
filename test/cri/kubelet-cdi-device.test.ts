// The kubelet's device-plugin path, end to end: a device plugin of ours advertises example.com/gpu to the
// kit's kubelet 1.32 and answers Allocate with CDI device names; a pod that asks for one gets it on
// skiffd as the CDI spec file describes it: the device node, the environment and the mount.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDevicePlugin } from '../support/device-plugin.ts';
import { containerStatus } from '../support/kube-types.ts';
import { container, pod } from '../support/kube-manifests.ts';
import { execIn } from '../support/kube-host-reads.ts';
import { startKubeletNode } from '../support/kubelet.ts';
import { until } from '../support/wait.ts';

test('kubelet 1.32: a device plugin allocates example.com/gpu as a CDI device, and the container has it', { timeout: 10 * 60_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-cdi-kubelet-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const specDir = join(dir, 'cdi');
  const driverFiles = join(dir, 'driver');
  mkdirSync(specDir);
  mkdirSync(driverFiles);
  writeFileSync(join(driverFiles, 'version'), 'example driver 1.0\n');
  const gpus = ['gpu0', 'gpu1'];
  writeFileSync(
    join(specDir, 'example.com-gpu.json'),
    JSON.stringify({
      cdiVersion: '0.6.0',
      kind: 'example.com/gpu',
      containerEdits: { mounts: [{ hostPath: driverFiles, containerPath: '/opt/example', options: ['ro'] }] },
      // Each device a character device with /dev/null's numbers: harmless to open and write.
      devices: gpus.map((id) => ({
        name: id,
        containerEdits: { env: [`EXAMPLE_GPU=${id}`], deviceNodes: [{ path: `/dev/example-${id}`, hostPath: '/dev/null' }] },
      })),
    }),
  );
  const node = await startKubeletNode(t, { skiffdConfig: `[cdi]\nspec_dirs = [${JSON.stringify(specDir)}]\n` });
  if (!node) return;
  t.after(() => node.cleanup());
  const plugin = await startDevicePlugin({ resourceName: 'example.com/gpu', devices: gpus, cdiName: (id) => `example.com/gpu=${id}` });
  t.after(() => plugin.stop());
  await until('the kubelet to watch the plugin', () => plugin.watched(), 60_000);

  const name = node.writePod(
    pod('gpu-user', {
      containers: [container('app', { script: 'exec sleep 3600', resources: { requests: { cpu: '10m' }, limits: { 'example.com/gpu': '1' } } })],
    }),
  );
  const running = await node.waitForPod(name, 'the app running', (p) => containerStatus(p, 'app')?.state.running && p, 5 * 60_000);
  assert.equal(plugin.allocations.length, 1, `one Allocate: ${JSON.stringify(plugin.allocations)}`);
  const [allocated] = plugin.allocations[0];
  assert.ok(gpus.includes(allocated));
  assert.equal((await execIn(node, running, 'app', ['sh', '-c', 'ls /dev | grep example-'])).trim(), `example-${allocated}`, 'only the allocated device');
  assert.equal(
    (await execIn(node, running, 'app', ['sh', '-c', `test -c /dev/example-${allocated} && echo x > /dev/example-${allocated} && echo wrote`])).trim(),
    'wrote',
  );
  assert.equal((await execIn(node, running, 'app', ['sh', '-c', 'echo $EXAMPLE_GPU'])).trim(), allocated);
  assert.equal((await execIn(node, running, 'app', ['cat', '/opt/example/version'])).trim(), 'example driver 1.0');
  node.deletePod(name);
  await node.waitForPodGone(name);
});
