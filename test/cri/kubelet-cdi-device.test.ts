// The kubelet's device-plugin path, end to end: a device plugin of ours advertises example.com/gpu to the
// kit's kubelet 1.36 and answers Allocate with CDI device names; a pod gets what it asked for on skiffd
// as the CDI spec file describes it: the device nodes, the environment and the mount. One pod asks for
// two devices whose specs set one variable each to its own value; two pods ask for one each.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEVICE_PLUGIN_DIR, startDevicePlugin } from '../support/device-plugin.ts';
import { containerStatus, type KubePod } from '../support/kube-types.ts';
import { container, pod } from '../support/kube-manifests.ts';
import { execIn } from '../support/kube-host-reads.ts';
import { startKubeletNode } from '../support/kubelet.ts';
import { until } from '../support/wait.ts';

test('kubelet 1.36: a device plugin allocates example.com/gpu as CDI devices: two to one pod, one each to two others', { timeout: 10 * 60_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-cdi-kubelet-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const specDir = join(dir, 'cdi');
  const driverFiles = join(dir, 'driver');
  mkdirSync(specDir);
  mkdirSync(driverFiles);
  writeFileSync(join(driverFiles, 'version'), 'example driver 1.0\n');
  const gpus = ['gpu0', 'gpu1', 'gpu2', 'gpu3'];
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
  // Watching is not yet holding: a pod admitted before the kubelet has taken the plugin's device list is
  // rejected for good ("no healthy devices present"). The kubelet checkpoints its healthy devices as it
  // takes them, in the plugin directory (a file an earlier kubelet may have left: its time tells).
  const checkpoint = join(DEVICE_PLUGIN_DIR, 'kubelet_internal_checkpoint');
  const mtime = () => (existsSync(checkpoint) ? statSync(checkpoint).mtimeMs : 0);
  const before = mtime();
  const plugin = await startDevicePlugin({ resourceName: 'example.com/gpu', devices: gpus, cdiName: (id) => `example.com/gpu=${id}` });
  t.after(() => plugin.stop());
  await until('the kubelet to watch the plugin', () => plugin.watched(), 60_000);
  await until(
    'the kubelet to hold the four devices as healthy',
    () => {
      if (mtime() <= before) return false;
      try {
        const data = (JSON.parse(readFileSync(checkpoint, 'utf8')) as { Data?: { RegisteredDevices?: Record<string, string[]> } }).Data;
        return (data?.RegisteredDevices?.['example.com/gpu']?.length ?? 0) === gpus.length;
      } catch {
        return false; // caught between its write and its rename
      }
    },
    60_000,
  );

  const asking = { pair: 2, 'one-a': 1, 'one-b': 1 } as const;
  const names = Object.entries(asking).map(([short, n]) =>
    node.writePod(
      pod(short, {
        containers: [container('app', { script: 'exec sleep 3600', resources: { requests: { cpu: '10m' }, limits: { 'example.com/gpu': String(n) } } })],
      }),
    ),
  );
  const seen = new Map<string, string[]>();
  for (const [i, name] of names.entries()) {
    const running: KubePod = await node.waitForPod(name, 'the app running', (p) => containerStatus(p, 'app')?.state.running && p, 5 * 60_000);
    const devices: string[] = (await execIn(node, running, 'app', ['sh', '-c', 'ls /dev | grep example- || true'])).trim().split('\n').filter(Boolean);
    const ids = devices.map((d: string) => d.replace(/^example-/, '')).sort();
    assert.equal(ids.length, Object.values(asking)[i], `${name} has as many devices as it asked for: ${devices.join(' ')}`);
    // The plugin's answer for this container, in the order the kubelet passed the CDI names on.
    const allocation = plugin.allocations.find((a) => [...a].sort().join() === ids.join());
    assert.ok(allocation, `${name}'s devices ${ids.join(',')} are one allocation of ${JSON.stringify(plugin.allocations)}`);
    for (const id of ids) {
      const node_ = `/dev/example-${id}`;
      assert.equal(
        (await execIn(node, running, 'app', ['sh', '-c', `test -c ${node_} && stat -c '%t:%T' ${node_}`])).trim(),
        '1:3',
        `${node_} is /dev/null's character device`,
      );
      assert.equal((await execIn(node, running, 'app', ['sh', '-c', `echo x > ${node_} && echo wrote`])).trim(), 'wrote');
    }
    // Each device's spec sets EXAMPLE_GPU: the last device asked for gives the value, as the CDI library does.
    assert.equal((await execIn(node, running, 'app', ['sh', '-c', 'echo $EXAMPLE_GPU'])).trim(), allocation.at(-1));
    assert.equal((await execIn(node, running, 'app', ['cat', '/opt/example/version'])).trim(), 'example driver 1.0');
    seen.set(name, ids);
  }
  const all = [...seen.values()].flat();
  assert.equal(new Set(all).size, all.length, `no device is in two pods: ${JSON.stringify(Object.fromEntries(seen))}`);
  for (const name of names) node.deletePod(name);
  for (const name of names) await node.waitForPodGone(name);
});
