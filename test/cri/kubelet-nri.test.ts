// NRI through the kubelet: the kit's kubelet 1.36 runs a static pod annotated for containerd/nri's
// device-injector sample plugin (the field's plugin, connected to skiffd's NRI socket as a user
// connects it), and the container finds the device node the annotation asks for. The container
// reports what it sees in its own log.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { containerStatus } from '../support/kube-types.ts';
import { container, pod } from '../support/kube-manifests.ts';
import { startKubeletNode } from '../support/kubelet.ts';
import { nriSamplePath, nriSamplesMissing, pluginSynchronized, runExternalPlugin } from '../support/nri.ts';
import { needs, unavailable } from '../support/prereq.ts';

test('kubelet 1.36: a pod annotated for the device-injector NRI plugin gets its device node', { timeout: 10 * 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['unshare'] })) return;
  const missing = nriSamplesMissing();
  if (missing) return unavailable(t, missing);
  // The harness gives the test daemon private NRI paths: its socket is <daemon dir>/nri/nri.sock.
  const node = await startKubeletNode(t);
  if (!node) return;
  t.after(() => node.cleanup());
  const socketDir = join(node.skiffd.dir, 'nri');
  const injector = runExternalPlugin(socketDir, [nriSamplePath('device-injector'), '-idx', '30']);
  t.after(() => injector.stop());
  await pluginSynchronized(injector, '30-device-injector', () => node.skiffd.logs());

  // The device-injector reads the pod's annotations, which the kubelet hands to RunPodSandbox.
  const metadata = {
    name: 'nri-device',
    annotations: { 'devices.nri.io/container.app': '- path: /dev/nri-null\n  type: c\n  major: 1\n  minor: 3\n  file_mode: 438\n' },
  };
  const name = node.writePod({
    ...pod('nri-device', {
      containers: [
        container('app', {
          script: "stat -c 'device %F %t:%T' /dev/nri-null 2>&1; exec sleep 3600",
        }),
      ],
    }),
    metadata,
  });
  await node.waitForPod(name, 'the app running', (p) => containerStatus(p, 'app')?.state.running, 5 * 60_000);
  await node.waitForPod(name, 'the app to log what it sees', () => node.logLines(name, 'app').length >= 1, 60_000);
  const seen = node.logLines(name, 'app');
  assert.equal(seen[0], 'device character special file 1:3', `the container's log:\n${seen.join('\n')}`);

  node.deletePod(name);
  await node.waitForPodGone(name);
});
