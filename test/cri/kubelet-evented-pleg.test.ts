// The kit's kubelet 1.36 with its Evented PLEG (feature gate EventedPLEG): it learns of pods and
// containers from skiffd's GetContainerEvents stream and relists only every 300 s, and each event
// replaces its cached status of the whole pod. So what it reports within a minute here (a pod running
// and Ready, its IP, one container's restart with the exit before it, a removal) came from the events,
// and an event that left out the sandbox's IP or a container of the pod would show: the kubelet re-creates
// a sandbox it sees without an IP, and starts again a container it does not see.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startKubeletNode } from '../support/kubelet.ts';
import { containerStatus, isReady } from '../support/kube-types.ts';
import { container, emptyDir, pod } from '../support/kube-manifests.ts';
import { execIn, sandboxOf } from '../support/kube-host-reads.ts';

/** Far below the Evented PLEG's 300 s relist: only events can make the kubelet see a change this soon. */
const SOONER_THAN_A_RELIST = 60_000;

test("kubelet 1.36 with EventedPLEG: pods, IPs and restarts from skiffd's events", { timeout: 10 * 60_000 }, async (t) => {
  const node = await startKubeletNode(t, { featureGates: { EventedPLEG: true } });
  if (!node) return;
  t.after(() => node.cleanup());
  const data = emptyDir('data', '/data');
  const web = node.writePod(pod('web', { containers: [container('app', { script: 'exec sleep 3600' })] }));
  const restarts = node.writePod(
    pod('restarts', {
      volumes: [data.volume],
      containers: [
        container('app', {
          // The first run waits to be told, then exits 3; the second stays.
          script: 'if [ -e /data/ran ]; then exec sleep 3600; fi; touch /data/ran; while [ ! -e /data/go ]; do sleep 0.1; done; exit 3',
          extra: { volumeMounts: [data.mount] },
        }),
        container('side', { script: 'exec sleep 3600' }),
      ],
    }),
  );

  const ready = await node.waitForPod(web, 'Ready', (p) => isReady(p) && p, 3 * 60_000);
  const sandbox = await sandboxOf(node, ready.metadata.uid);
  assert.ok(sandbox?.ip, 'skiffd gave the pod an IP');
  assert.equal(ready.status.podIP, sandbox.ip, "the kubelet reports the pod's IP from the sandbox status in the events");

  const first = await node.waitForPod(
    restarts,
    'the first run',
    (p) => containerStatus(p, 'app')?.state.running && containerStatus(p, 'side')?.state.running && p,
    3 * 60_000,
  );
  assert.equal(containerStatus(first, 'app')?.restartCount, 0);
  const before = await sandboxOf(node, first.metadata.uid);
  const side = containerStatus(first, 'side')?.containerID;
  await execIn(node, first, 'app', ['touch', '/data/go']);
  const again = await node.waitForPod(
    restarts,
    'the restart after the exit, seen from events',
    (p) => {
      const c = containerStatus(p, 'app');
      return c?.restartCount === 1 && c.state.running && p;
    },
    SOONER_THAN_A_RELIST,
  );
  const last = containerStatus(again, 'app')?.lastState.terminated;
  assert.deepEqual([last?.exitCode, last?.reason], [3, 'Error']);
  // Only the container that ended ran again: the same sandbox, the other container untouched.
  const { items } = await node.runtime.listPodSandbox({ filter: { id: '', state: undefined, labelSelector: { 'io.kubernetes.pod.uid': again.metadata.uid } } });
  assert.deepEqual(
    items.map((x) => x.id),
    [before?.id],
    'the pod kept its one sandbox',
  );
  assert.equal(containerStatus(again, 'side')?.containerID, side, 'the other container was not started again');
  assert.equal(containerStatus(again, 'side')?.restartCount, 0);
  assert.equal(again.status.podIP, before?.ip);

  node.deletePod(web);
  await node.waitForPodGone(web, SOONER_THAN_A_RELIST);
  node.deletePod(restarts);
  await node.waitForPodGone(restarts, SOONER_THAN_A_RELIST);
});
