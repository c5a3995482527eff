// The kit's kubelet 1.36 with the ImageVolume feature gate runs a pod whose volume is an image: it pulls
// the image, skiffd mounts it read-only into both containers, and removing the pod leaves no mount. The
// same kubelet then runs a pod whose image volume is an OCI artifact pushed with the real oras, one of
// its files mounted by subPath, which the container prints.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { containerStatus } from '../support/kube-types.ts';
import { container, pod } from '../support/kube-manifests.ts';
import { execIn, runtimeId } from '../support/kube-host-reads.ts';
import { KIT_IMAGES, startKubeletNode } from '../support/kubelet.ts';
import { mountsUnder } from '../support/kubelet-host.ts';
import { until } from '../support/wait.ts';
import { fetchOras, oras } from '../support/oras.ts';
import { unavailable } from '../support/prereq.ts';

/** Image-volume mounts skiffd holds on the host (overlays or binds under a container's image-volumes/). */
const imageVolumeMounts = (root: string) => mountsUnder(join(root, 'containers')).filter((target) => target.includes('/image-volumes/'));

test('kubelet 1.36 (ImageVolume): image volumes', { timeout: 12 * 60_000 }, async (t) => {
  const node = await startKubeletNode(t, { featureGates: { ImageVolume: true } });
  if (!node) return;
  t.after(() => node.cleanup());

  await t.test('a pod whose volume is an image, in two containers, read-only', async () => {
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

  await t.test('a pod whose volume is an OCI artifact pushed with oras, one file by subPath, prints it', async (st) => {
    const found = await fetchOras();
    if ('missing' in found) return unavailable(st, found.missing);
    const work = mkdtempSync(join(tmpdir(), 'skiff-kubelet-artifact-'));
    st.after(() => rmSync(work, { recursive: true, force: true }));
    const motd = `served as an OCI artifact ${process.pid}`;
    writeFileSync(join(work, 'motd.txt'), `${motd}\n`);
    writeFileSync(join(work, 'other.txt'), 'not this one\n');
    // The kit registry the node's skiffd already pulls from, over TLS with the registry's CA.
    const reference = `127.0.0.1:${node.registry.port}/artifacts/motd:v1`;
    const transport = node.registry.caPath ? ['--ca-file', node.registry.caPath] : ['--plain-http'];
    await oras(
      found.bin,
      ['push', reference, ...transport, '--artifact-type', 'application/vnd.example.motd', 'motd.txt:text/plain', 'other.txt:text/plain'],
      work,
    );
    const name = node.writePod(
      pod('artifact-volume', {
        volumes: [{ name: 'm', image: { reference, pullPolicy: 'IfNotPresent' } }],
        containers: [
          container('reader', {
            script: 'cat /etc/motd.txt && exec sleep 3600',
            extra: { volumeMounts: [{ name: 'm', mountPath: '/etc/motd.txt', subPath: 'motd.txt' }] },
          }),
        ],
      }),
    );
    await node.waitForPod(name, 'the reader running', (p) => containerStatus(p, 'reader')?.state.running && p);
    await until('the reader to print the artifact file', () => node.logLines(name, 'reader').includes(motd), 60_000).catch((err: Error) => {
      throw new Error(`${err.message}\nlog: ${JSON.stringify(node.logLines(name, 'reader'))}\nskiffd log tail:\n${node.skiffd.logs().slice(-3000)}`);
    });
    assert.deepEqual(node.logLines(name, 'reader'), [motd], 'the one file, and only it');
    node.deletePod(name);
    await node.waitForPodGone(name);
  });
});
