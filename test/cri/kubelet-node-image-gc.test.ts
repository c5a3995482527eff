// Image garbage collection by the kubelet on skiffd. The kubelet judges the image filesystem from what
// ImageFsInfo reports (its mount point, resolved to capacity and free space, and the bytes the images
// use), and removes images no container uses, oldest first, through RemoveImage. Here its eviction
// threshold on the image filesystem (imagefs.available) is set so that the disk is always short: every
// 10 s the kubelet then deletes every unused image, and must spare the ones in use.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from '../../scripts/build-skiffd.mjs';
import { KIT_IMAGES, startKubeletNode } from '../support/kubelet.ts';
import { containerStatus, isReady } from '../support/kube-types.ts';
import { until } from '../support/wait.ts';

const BUSYBOX = KIT_IMAGES.busybox;
const NGINX = KIT_IMAGES.nginx;
// The test's time counts the wait for the kubelet lock (up to 1500 s while another kubelet runs here).
const LOCK_WAIT_MS = 1500_000;
const small = { requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '64Mi' } };

test('the kubelet garbage-collects unused images on skiffd and spares those in use', { timeout: LOCK_WAIT_MS + 6 * 60_000 }, async (t) => {
  // skiffd as a node installs it: the bundle dist/skiffd.cjs, built here.
  const dist = mkdtempSync(join(tmpdir(), 'skiff-kubelet-node-'));
  t.after(() => rmSync(dist, { recursive: true, force: true }));
  const built = await build({ outdir: join(dist, 'dist'), sea: false, quiet: true });
  const node = await startKubeletNode(t, {
    skiffdCommand: [process.execPath, built.cjs],
    kubeletConfig: {
      // Image filesystem "short" whenever less than 99% of it is free: reclaim runs on every pass.
      evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '99%', 'nodefs.inodesFree': '1%' },
      evictionPressureTransitionPeriod: '1s',
      // An image is eligible one second after the kubelet first saw it (default two minutes).
      imageMinimumGCAge: '1s',
    },
  });
  if (!node) return;
  t.after(() => node.cleanup());

  const tags = async () => new Set((await node.images.listImages({})).images.flatMap((i) => i.repoTags));
  const attempts = () => node.kubeletLogs().split('"Attempting to delete unused images"').length - 1;
  const imageFsUsed = async () => (await node.summary()).node.runtime?.imageFs?.usedBytes ?? 0;

  // Static pods are critical: the kubelet never evicts them, it can only reclaim images.
  const keep = node.writePod({
    metadata: { name: 'keep' },
    spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'c', image: BUSYBOX, command: ['sleep', '3600'], resources: small }] },
  });
  const web = node.writePod({
    metadata: { name: 'web' },
    spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'c', image: NGINX, resources: small }] },
  });
  await node.waitForPod(keep, 'Ready', isReady);
  await node.waitForPod(web, 'running', (p) => containerStatus(p, 'c')?.state.running);

  // Two reclaim passes while both images are in use: neither goes.
  const seen = attempts();
  await until('two image reclaim passes of the kubelet', () => attempts() >= seen + 2, 60_000);
  const inUse = await tags();
  assert.ok(inUse.has(BUSYBOX) && inUse.has(NGINX), `images in use are spared: ${[...inUse].join(', ')}`);
  const usedWithNginx = await imageFsUsed();
  assert.ok(usedWithNginx > 0, 'the summary shows the bytes ImageFsInfo reports');

  // Once the pod that used nginx is gone, its image is garbage.
  node.deletePod(web);
  await node.waitForPodGone(web);
  await until('the kubelet to remove the unused nginx image', async () => !(await tags()).has(NGINX), 60_000);
  assert.ok((await tags()).has(BUSYBOX), 'the image of the running pod stays');
  assert.ok(node.kubeletLogs().includes('"Removing image to free bytes"'), 'the kubelet removed it through RemoveImage');
  await until('ImageFsInfo to report the space given back', async () => (await imageFsUsed()) < usedWithNginx, 30_000);
  const keepPod = await node.waitForPod(keep, 'Ready', isReady);
  assert.equal(containerStatus(keepPod, 'c')?.restartCount, 0);
});
