// The single executable (dist/skiffd, Node SEA) under the kit's kubelet 1.32, the oldest release the kit
// carries (every other kubelet suite runs 1.36): one pod with an HTTP readiness probe and an exec liveness
// probe that restarts its container, then the pod's deletion. Nodes upgrade their kubelet and runtime
// apart, so a node whose kubelet lags must still work.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from '../../scripts/build-skiffd.mjs';
import { startKubeletNode, KIT_IMAGES } from '../support/kubelet.ts';
import { containerStatus, isReady } from '../support/kube-types.ts';
import { container, httpProbe, livenessUntilFile, pod } from '../support/kube-manifests.ts';
import { execIn, sandboxOf } from '../support/kube-host-reads.ts';
import { until } from '../support/wait.ts';

test('kubelet 1.32 (version skew) on the single executable dist/skiffd: probes, a liveness restart, deletion', { timeout: 30 * 60_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-kubelet-sea-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const built = await build({ outdir: join(dir, 'dist'), quiet: true });
  assert.ok(built.sea, 'the single executable was built');
  const node = await startKubeletNode(t, { skiffdCommand: [built.sea], kubeVersion: '1.32' });
  if (!node) return;
  t.after(() => node.cleanup());

  const name = node.writePod(
    pod('sea', {
      containers: [
        container('web', { image: KIT_IMAGES.nginx, extra: { readinessProbe: httpProbe(80) } }),
        container('app', { script: 'echo attempt; exec sleep 3600', extra: { livenessProbe: livenessUntilFile('/tmp/unhealthy') } }),
      ],
    }),
  );
  const ready = await node.waitForPod(name, 'Ready', isReady);
  assert.equal(containerStatus(ready, 'web')?.ready, true);
  await execIn(node, ready, 'app', ['touch', '/tmp/unhealthy']);
  const restarted = await node.waitForPod(
    name,
    'app restarted once and the pod Ready again',
    (p) => containerStatus(p, 'app')?.restartCount === 1 && isReady(p),
  );
  assert.equal(containerStatus(restarted, 'app')?.lastState.terminated?.reason, 'Error');
  assert.equal(containerStatus(restarted, 'web')?.restartCount, 0, 'the other container kept running');
  await until('the second attempt to log', () => node.logLines(name, 'app', 1).includes('attempt'), 60_000);

  node.deletePod(name);
  await node.waitForPodGone(name);
  await until('the kubelet to remove the sandbox', async () => !(await sandboxOf(node, restarted.metadata.uid)), 150_000);
});
