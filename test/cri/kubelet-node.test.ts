// The node's own behaviours under the real kubelet 1.36 (standalone, static pods) on skiffd: restarting
// the kubelet or killing skiffd with -9 restarts no container; the kubelet's pulls honour Always and
// IfNotPresent; its log rotation keeps every line a container writes, through ReopenContainerLog; and
// /stats/summary, with the kubelet's default stats provider, is complete for pods and containers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { build } from '../../scripts/build-skiffd.mjs';
import { KIT_IMAGES, startKubeletNode, type KubePod } from '../support/kubelet.ts';
import { containerStatus, isReady } from '../support/kube-types.ts';
import { execProbe } from '../support/kube-manifests.ts';
import { buildImage, buildTar, busyboxBaseEntries, Pusher } from '../support/image-builder.ts';
import { readRotatedLog, rotatedFiles } from '../support/rotated-logs.ts';
import { until } from '../support/wait.ts';

const BUSYBOX = KIT_IMAGES.busybox;
// The test's time counts the wait for the kubelet lock (up to 1500 s while another kubelet runs here).
const LOCK_WAIT_MS = 1500_000;
const small = { requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '64Mi' } };

/** Lines a hostPath file has (the probes below append one per run). */
function countLines(file: string): number {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean).length;
  } catch {
    return 0;
  }
}

interface Seen {
  containerID?: string;
  restartCount: number;
  startedAt?: string;
}

function snapshot(pod: KubePod): Record<string, Seen> {
  const out: Record<string, Seen> = {};
  for (const c of pod.status.containerStatuses ?? []) {
    out[c.name] = { containerID: c.containerID, restartCount: c.restartCount, startedAt: c.state.running?.startedAt };
  }
  return out;
}

/** Same containers, same start, no restart and no terminated last state: the kubelet saw no exit. */
function assertUntouched(pod: KubePod, before: Record<string, Seen>, after: string): void {
  assert.deepEqual(snapshot(pod), before, `${after}: the containers must be the same ones, never restarted`);
  for (const c of pod.status.containerStatuses ?? []) {
    assert.equal(c.lastState.terminated, undefined, `${after}: ${c.name} has no terminated last state`);
    assert.ok(c.ready, `${after}: ${c.name} is ready`);
  }
}

test('the kubelet on skiffd: node restarts, image pulls, log rotation, stats', { timeout: LOCK_WAIT_MS + 6 * 60_000 }, async (t) => {
  // skiffd as a node installs it: the bundle dist/skiffd.cjs, built here.
  const dist = mkdtempSync(join(tmpdir(), 'skiff-kubelet-node-'));
  t.after(() => rmSync(dist, { recursive: true, force: true }));
  const built = await build({ outdir: join(dist, 'dist'), sea: false, quiet: true });
  const node = await startKubeletNode(t, {
    skiffdCommand: [process.execPath, built.cjs],
    kubeletConfig: { containerLogMaxSize: '1Ki', containerLogMaxFiles: 10, containerLogMonitorInterval: '3s' },
  });
  if (!node) return;
  t.after(() => node.cleanup());

  const probeDir = join(node.dir, 'probes');
  const logCtl = join(node.dir, 'logctl');
  mkdirSync(probeDir, { recursive: true });
  mkdirSync(logCtl, { recursive: true });

  // Every pod at once: the node runs them side by side while the checks take turns.
  const busy = node.writePod({
    metadata: { name: 'busy' },
    spec: {
      terminationGracePeriodSeconds: 2,
      volumes: [{ name: 'probes', hostPath: { path: probeDir, type: 'Directory' } }],
      containers: [
        {
          name: 'work',
          image: BUSYBOX,
          // 256 KiB in its writable layer, a log line a second, a little CPU all along.
          command: [
            'sh',
            '-c',
            'head -c 262144 /dev/zero > /junk; i=0; while true; do i=$((i+1)); echo "tick $i"; j=0; while [ $j -lt 300 ]; do j=$((j+1)); done; sleep 1; done',
          ],
          // An exec probe that must keep passing through every restart; it counts its runs on the host.
          livenessProbe: execProbe('echo x >> /probes/work'),
          volumeMounts: [{ name: 'probes', mountPath: '/probes' }],
          resources: small,
        },
        { name: 'idle', image: BUSYBOX, command: ['sleep', '3600'], resources: small },
      ],
    },
  });
  const writer = node.writePod({
    metadata: { name: 'writer' },
    spec: {
      terminationGracePeriodSeconds: 2,
      volumes: [{ name: 'ctl', hostPath: { path: logCtl, type: 'Directory' } }],
      containers: [
        {
          name: 'lines',
          image: BUSYBOX,
          // Numbered lines until the test says stop; the kubelet rotates the log every 1 KiB or so.
          command: [
            'sh',
            '-c',
            'i=0; while [ ! -e /ctl/stop ]; do i=$((i+1)); echo "line $i ............................................................"; sleep 0.02; done; echo "last $i"; exec sleep 3600',
          ],
          volumeMounts: [{ name: 'ctl', mountPath: '/ctl' }],
          resources: small,
        },
      ],
    },
  });

  await t.test('log rotation keeps every line, through ReopenContainerLog', async () => {
    await node.waitForPod(writer, 'running', (p) => containerStatus(p, 'lines')?.state.running);
    const dir = dirname(node.logPath(writer, 'lines'));
    // Several rotations, each a rename by the kubelet and a ReopenContainerLog to skiffd; stop before the
    // kubelet's limit of 10 files makes it delete the oldest.
    await until('the kubelet to rotate the log three times', () => rotatedFiles(dir).length >= 3, 90_000);
    writeFileSync(join(logCtl, 'stop'), '');
    const last = await until('the writer to log its last line', async () => (await readRotatedLog(dir)).lines.find((l) => l.startsWith('last ')), 30_000);
    const total = Number(last.slice('last '.length));
    const { rotated, lines } = await readRotatedLog(dir);
    assert.ok(rotated.length >= 3 && rotated.length < 10, `rotated files: ${rotated.join(', ')}`);
    const numbers = lines.filter((l) => l.startsWith('line ')).map((l) => Number(l.split(' ')[1]));
    const expected = Array.from({ length: total }, (_, i) => i + 1);
    if (numbers.length !== total || numbers.some((n, i) => n !== i + 1)) {
      const seen = new Set<number>();
      const dup: number[] = [];
      for (const n of numbers) {
        if (seen.has(n)) dup.push(n);
        seen.add(n);
      }
      const lost = expected.filter((n) => !seen.has(n));
      assert.fail(`${total} lines written, ${numbers.length} read back; lost: ${lost.slice(0, 20).join(',')}; duplicated: ${dup.slice(0, 20).join(',')}`);
    }
    assert.equal(lines.at(-1), `last ${total}`);
  });

  await t.test('restarting the kubelet restarts no container', async () => {
    const before = snapshot(await node.waitForPod(busy, 'Ready', isReady));
    await node.restartKubelet();
    await probedAgain(busy, join(probeDir, 'work'));
    assertUntouched(await node.waitForPod(busy, 'Ready', isReady), before, 'after the kubelet restart');
  });

  await t.test('killing skiffd with -9 and starting it again restarts no container', async () => {
    const before = snapshot(await node.waitForPod(busy, 'Ready', isReady));
    await node.restartSkiffd('SIGKILL');
    await probedAgain(busy, join(probeDir, 'work'));
    assertUntouched(await node.waitForPod(busy, 'Ready', isReady), before, 'after skiffd was killed and started again');
    // The kubelet's own view of the runtime came back too: the writer, untouched, keeps its container.
    const lines = await node.pod(writer);
    assert.equal(lines && containerStatus(lines, 'lines')?.restartCount, 0);
  });

  await t.test('image pulls: Always pulls the tag again, IfNotPresent uses the image the node has', async () => {
    const pusher = new Pusher(node.registry.url);
    const base = await buildTar(busyboxBaseEntries());
    const push = async (repo: string, marker: string) => {
      const image = buildImage({ format: 'oci', layers: [base, await buildTar([{ name: 'marker', content: `${marker}\n` }])] });
      await pusher.image(repo, image, 'v1');
    };
    const pod = (name: string, repo: string, policy: string) =>
      node.writePod({
        metadata: { name },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: 'c',
              image: `registry.k8s.io/${repo}:v1`,
              imagePullPolicy: policy,
              command: ['sh', '-c', 'cat /marker; exec sleep 3600'],
              resources: small,
            },
          ],
        },
      });
    const marker = async (full: string) => {
      await node.waitForPod(full, 'running', (p) => containerStatus(p, 'c')?.state.running);
      return until(`${full} to print its marker`, () => node.logLines(full, 'c')[0], 20_000);
    };
    await push('skiff-test/always', 'one');
    await push('skiff-test/if-not-present', 'one');
    const always1 = pod('always-1', 'skiff-test/always', 'Always');
    const present1 = pod('present-1', 'skiff-test/if-not-present', 'IfNotPresent');
    assert.equal(await marker(always1), 'one');
    assert.equal(await marker(present1), 'one', 'IfNotPresent pulls an image the node lacks');
    // The tags move on in the registry.
    await push('skiff-test/always', 'two');
    await push('skiff-test/if-not-present', 'two');
    const always2 = pod('always-2', 'skiff-test/always', 'Always');
    const present2 = pod('present-2', 'skiff-test/if-not-present', 'IfNotPresent');
    assert.equal(await marker(always2), 'two', 'Always pulls the tag again');
    assert.equal(await marker(present2), 'one', 'IfNotPresent runs the image already on the node');
    const imageId = async (full: string) => containerStatus((await node.pod(full))!, 'c')!.imageID;
    assert.notEqual(await imageId(always1), await imageId(always2));
    assert.equal(await imageId(present1), await imageId(present2));
    for (const full of [always1, present1, always2, present2]) node.deletePod(full);
    for (const full of [always1, present1, always2, present2]) await node.waitForPodGone(full);
  });

  await t.test('/stats/summary is complete for pods and containers', async () => {
    const pod = await node.waitForPod(busy, 'Ready', isReady);
    const stats = await until(
      'the summary to have usage for both containers of the busy pod',
      async () => {
        const s = (await node.summary()).pods?.find((p) => p.podRef.name === busy);
        const work = s?.containers?.find((c) => c.name === 'work');
        return s && (s.containers?.length ?? 0) === 2 && work?.cpu?.usageNanoCores !== undefined && (work.rootfs?.usedBytes ?? 0) >= 262144 ? s : undefined;
      },
      60_000,
    );
    assert.equal(stats.podRef.uid, pod.metadata.uid);
    for (const c of stats.containers ?? []) {
      const what = `container ${c.name}`;
      assert.ok((c.cpu?.usageCoreNanoSeconds ?? 0) > 0, `${what}: cpu usageCoreNanoSeconds`);
      assert.ok(c.cpu?.usageNanoCores !== undefined, `${what}: cpu usageNanoCores`);
      assert.ok((c.memory?.workingSetBytes ?? 0) > 0, `${what}: memory workingSetBytes`);
      assert.ok(
        c.rootfs?.usedBytes !== undefined && (c.rootfs.capacityBytes ?? 0) > 0 && c.rootfs.inodesUsed !== undefined,
        `${what}: rootfs ${JSON.stringify(c.rootfs)}`,
      );
      assert.ok(
        c.logs?.usedBytes !== undefined && (c.logs.capacityBytes ?? 0) > 0 && c.logs.inodesUsed !== undefined,
        `${what}: logs ${JSON.stringify(c.logs)}`,
      );
    }
    const work = stats.containers!.find((c) => c.name === 'work')!;
    assert.ok(work.rootfs!.usedBytes! >= 262144, `the 256 KiB the container wrote shows in its rootfs (${work.rootfs!.usedBytes})`);
    assert.ok(work.logs!.usedBytes! > 0, `the lines the container logged show in its logs (${work.logs!.usedBytes})`);
    assert.ok((stats.cpu?.usageCoreNanoSeconds ?? 0) > 0, `pod cpu ${JSON.stringify(stats.cpu)}`);
    const m = stats.memory;
    assert.ok((m?.workingSetBytes ?? 0) > 0 && (m?.usageBytes ?? 0) > 0 && m?.rssBytes !== undefined, `pod memory ${JSON.stringify(m)}`);
    // The pod's memory limit is the sum of its containers' (64 MiB each): available is what is left of it.
    assert.ok((m?.availableBytes ?? 0) > 0 && m!.availableBytes! <= 128 * 2 ** 20, `pod memory availableBytes ${m?.availableBytes}`);
    const eph = stats['ephemeral-storage'];
    assert.ok((eph?.usedBytes ?? 0) >= 262144 && (eph?.capacityBytes ?? 0) > 0, `pod ephemeral-storage ${JSON.stringify(eph)}`);
    const runtime = (await node.summary()).node.runtime?.imageFs;
    assert.ok((runtime?.usedBytes ?? 0) > 0 && (runtime?.capacityBytes ?? 0) > 0 && (runtime?.availableBytes ?? 0) > 0, `imageFs ${JSON.stringify(runtime)}`);
  });
});

/** Waits until the kubelet has run the pod's exec liveness probe three more times (ExecSync on skiffd). */
async function probedAgain(full: string, countFile: string): Promise<void> {
  const start = countLines(countFile);
  await until(`three more liveness probes of ${full} after the restart`, () => countLines(countFile) >= start + 3, 60_000);
}
