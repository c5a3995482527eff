// The kit's kubelet 1.36 with the ImageVolume feature gate runs a pod whose volume is an image: it pulls
// the image, skiffd mounts it read-only into both containers, and removing the pod leaves no mount.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { containerStatus } from '../support/kube-types.ts';
import { container, pod } from '../support/kube-manifests.ts';
import { execIn, runtimeId } from '../support/kube-host-reads.ts';
import { KIT_IMAGES, startKubeletNode } from '../support/kubelet.ts';
import { mountsUnder } from '../support/kubelet-host.ts';
import { until } from '../support/wait.ts';

/** Image-volume mounts skiffd holds on the host (overlays or binds under a container's image-volumes/). */
const imageVolumeMounts = (root: string) => mountsUnder(join(root, 'containers')).filter((target) => target.includes('/image-volumes/'));

test('kubelet 1.36 (ImageVolume): a pod whose volume is an image, in two containers, read-only', { timeout: 10 * 60_000 }, async (t) => {
  const node = await startKubeletNode(t, { featureGates: { ImageVolume: true } });
  if (!node) return;
  t.after(() => node.cleanup());
  // No readOnly: the kubelet mounts an image volume read-only whatever the pod says.
  const mount = { name: 'tools', mountPath: '/tools' };
  const name = node.writePod(
    pod('image-volume', {
      volumes: [{ name: 'tools', image: { reference: KIT_IMAGES.nginx, pullPolicy: 'IfNotPresent' } }],
      containers: [
        container('first', { script: 'exec sleep 3600', extra: { volumeMounts: [mount] } }),
        container('second', { script: 'exec sleep 3600', extra: { volumeMounts: [mount] } }),
      ],
    }),
  );
  const running = await node.waitForPod(
    name,
    'both containers running',
    (p) => containerStatus(p, 'first')?.state.running && containerStatus(p, 'second')?.state.running && p,
  );
  for (const c of ['first', 'second']) {
    // The nginx stand-in's image holds its program; the busybox container sees it under /tools.
    const listing = await execIn(node, running, c, ['ls', '/tools']);
    assert.ok(listing.trim().length > 0, `${c} sees the image's files:\n${listing}`);
    const write = await node.runtime.execSync({ containerId: runtimeId(running, c), cmd: ['touch', '/tools/x'], timeout: 10n });
    assert.notEqual(write.exitCode, 0, `${c}: the image volume is read-only`);
  }
  assert.equal(imageVolumeMounts(node.skiffd.root).length, 2, 'one read-only view of the image per container');
  node.deletePod(name);
  await node.waitForPodGone(name);
  await until('the image volume mounts to go', () => imageVolumeMounts(node.skiffd.root).length === 0, 60_000);
});
