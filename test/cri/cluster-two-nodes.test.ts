// Two nodes, two runtimes, one cluster: skiffd's node `localhost` and a second kubelet on containerd
// (Debian's, started here) as `127.0.0.2`, as a team moving a node pool from containerd to skiffd runs
// them side by side. Each kubelet has its own root dir, port and cgroup root; each runtime its own pod
// subnet and bridge, routed by the host. A Deployment spreads over both; pods reach each other by pod
// IP across the runtimes; draining skiffd's node moves its pods to containerd's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startCluster, joinKubelet } from '../support/cluster.ts';
import { KIT_IMAGES } from '../support/kubelet.ts';
import { apiPod, container, httpProbe } from '../support/kube-manifests.ts';
import { isReady, type KubePod } from '../support/kube-types.ts';
import { needs } from '../support/prereq.ts';
import { removeCgroupTree } from '../support/kubelet-host.ts';
import { ContainerState, PodSandboxState } from '../../proto/gen/runtime/v1/api.ts';
import { containerdBinary, startContainerdPeer, CONTAINERD_INSTALL_HINT } from '../../bench/cri/containerd-peer.ts';
import { KIT_PAUSE_IMAGE } from '../../bench/cri/kubelet-node.ts';

const NS = 'pool';
const NODE_B = '127.0.0.2';
const CGROUP_ROOT_B = '/node-b';

const nodeOf = (p: KubePod) => (p.spec as { nodeName?: string }).nodeName ?? '';

/** The second kubelet's cgroup root in every controller of this cgroup v1 host. */
function cgroupRootDirs(): string[] {
  return readdirSync('/sys/fs/cgroup', { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => join('/sys/fs/cgroup', e.name, CGROUP_ROOT_B.slice(1)));
}

test('a skiffd node and a containerd node in one cluster', { timeout: 15 * 60_000 }, async (t) => {
  if (!needs(t, { commands: ['containerd', 'containerd-shim-runc-v2'] })) return;
  assert.ok(containerdBinary(), CONTAINERD_INSTALL_HINT);
  const c = await startCluster(t);
  if (!c) return;
  t.after(() => c.cleanup());

  const dirB = join(c.dir, 'node-b');
  mkdirSync(dirB, { recursive: true });
  for (const d of cgroupRootDirs()) mkdirSync(d, { recursive: true });
  const mirrors = Object.fromEntries(['registry.k8s.io', 'gcr.io', 'public.ecr.aws', 'docker.io'].map((h) => [h, c.registry.url]));
  const containerd = await startContainerdPeer(join(dirB, 'containerd'), `127.0.0.1:${c.registry.port}`, KIT_PAUSE_IMAGE, mirrors);
  c.onCleanup(async () => {
    await containerd.teardown();
    for (const d of cgroupRootDirs()) removeCgroupTree(d);
  });
  const kubeletB = await joinKubelet(c.controlPlane, c.lock, {
    nodeName: NODE_B,
    address: NODE_B,
    socket: containerd.socket,
    dir: dirB,
    config: { cgroupRoot: CGROUP_ROOT_B },
  });
  c.onCleanup(() => kubeletB.stop());

  await t.test('both nodes Ready, each with its own runtime', async () => {
    const a = await c.node(c.nodeName);
    const b = await c.node(NODE_B);
    assert.match(a.status.nodeInfo.containerRuntimeVersion, /^skiffd:\/\//);
    assert.match(b.status.nodeInfo.containerRuntimeVersion, /^containerd:\/\//);
    for (const n of [a, b]) assert.equal(n.status.conditions.find((x) => x.type === 'Ready')?.status, 'True', n.metadata.name);
    const wide = await c.kubectlOk(['get', 'nodes', '-o', 'wide']);
    assert.match(wide, /localhost\s+Ready.*skiffd:\/\//);
    assert.match(wide, /127\.0\.0\.2\s+Ready.*containerd:\/\//);
  });

  await c.namespace(NS);
  await c.apply({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'spread', namespace: NS },
    spec: {
      replicas: 4,
      selector: { matchLabels: { app: 'spread' } },
      template: {
        metadata: { labels: { app: 'spread' } },
        spec: {
          terminationGracePeriodSeconds: 1,
          topologySpreadConstraints: [
            {
              maxSkew: 1,
              topologyKey: 'kubernetes.io/hostname',
              whenUnsatisfiable: 'DoNotSchedule',
              // A cordoned node leaves the count, so a drain can move every pod to the other node.
              nodeTaintsPolicy: 'Honor',
              labelSelector: { matchLabels: { app: 'spread' } },
            },
          ],
          containers: [container('web', { image: KIT_IMAGES.nginx, extra: { readinessProbe: httpProbe(80), ports: [{ containerPort: 80 }] } })],
        },
      },
    },
  });

  await t.test('a Deployment with a topology spread constraint runs on both nodes', async () => {
    await c.kubectlOk(['rollout', 'status', '-n', NS, 'deployment/spread', '--timeout=180s'], { timeoutMs: 200_000 });
    const pods = await c.pods(NS, 'app=spread');
    const perNode = new Map<string, number>();
    for (const p of pods) perNode.set(nodeOf(p), (perNode.get(nodeOf(p)) ?? 0) + 1);
    assert.deepEqual(Object.fromEntries(perNode), { localhost: 2, [NODE_B]: 2 });
  });

  await t.test('a pod on each node reaches a pod on the other by pod IP', async () => {
    // One busybox pod per node, each serving its node's name over HTTP.
    const peer = (name: string, node: string) =>
      apiPod(NS, name, {
        nodeName: node,
        containers: [
          container('http', {
            script: `mkdir -p /www && echo "served on ${node}" > /www/index.html && exec httpd -f -p 8080 -h /www`,
            extra: { readinessProbe: httpProbe(8080) },
          }),
        ],
      });
    await c.apply(peer('peer-a', c.nodeName), peer('peer-b', NODE_B));
    const onA = await c.waitForPod(NS, 'peer-a', 'Ready', isReady);
    const onB = await c.waitForPod(NS, 'peer-b', 'Ready', isReady);
    assert.ok(onA.status.podIP && onB.status.podIP);
    assert.notEqual(onA.status.podIP, onB.status.podIP);
    for (const [from, to] of [
      [onA, onB],
      [onB, onA],
    ]) {
      // A new pod's first packets across the two bridges can be refused for a moment after both pods
      // are Ready: wait (bounded) for an answer rather than bet on the first try.
      const url = `http://${to.status.podIP}:8080/`;
      let last = '';
      const answer: string = await c
        .waitFor(
          `${nodeOf(from)} -> ${nodeOf(to)} (${url})`,
          async () => {
            const r = await c.kubectl(['exec', '-n', NS, from.metadata.name, '--', 'wget', '-qO-', url], { timeoutMs: 20_000 });
            last = `exit ${r.code}: ${r.stderr}`;
            return r.code === 0 && r.stdout;
          },
          30_000,
        )
        .catch((err: Error) => assert.fail(`${err.message.split('\n')[0]}; last try: ${last}`));
      assert.equal(answer, `served on ${nodeOf(to)}\n`);
    }
  });

  await t.test("draining skiffd's node moves its pods to containerd's and leaves none on skiffd", async () => {
    await c.kubectlOk(['drain', c.nodeName, '--ignore-daemonsets', '--delete-emptydir-data', '--force', '--timeout=180s'], { timeoutMs: 200_000 });
    t.after(() => c.kubectl(['uncordon', c.nodeName]));
    assert.equal((await c.node()).spec.unschedulable, true);
    await c.waitFor(
      '4 ready pods, all on the containerd node',
      async () => {
        const pods = await c.pods(NS, 'app=spread');
        return pods.length === 4 && pods.every((p) => nodeOf(p) === NODE_B && isReady(p));
      },
      180_000,
    );
    // Evicted pods are stopped at once; the kubelet removes their stopped sandboxes at its next garbage
    // collection, up to a minute later, so what must be gone now is every running sandbox and container.
    const labelSelector = { 'io.kubernetes.pod.namespace': NS };
    await c.waitFor("no running pod of the namespace left on skiffd's node", async () => {
      const { items } = await c.runtime.listPodSandbox({ filter: { id: '', state: { state: PodSandboxState.SANDBOX_READY }, labelSelector } });
      const { containers } = await c.runtime.listContainers({
        filter: { id: '', podSandboxId: '', state: { state: ContainerState.CONTAINER_RUNNING }, labelSelector },
      });
      return items.length === 0 && containers.length === 0;
    });
  });
});
