// /stats/summary with the kubelet's feature gate PodAndContainerStatsFromCRI: every pod and container
// figure then comes from skiffd's stats RPCs (ListPodSandboxStats with its containers' stats), pod
// network included. Counters the summary shows are bracketed by skiffd's own answers just before and
// just after, so they are skiffd's numbers, not the kubelet's cAdvisor's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from '../../scripts/build-skiffd.mjs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KIT_IMAGES, startKubeletNode } from '../support/kubelet.ts';
import { isReady, type StatsPod } from '../support/kube-types.ts';
import { until } from '../support/wait.ts';
import type { PodSandboxStats } from '../../proto/gen/runtime/v1/api.ts';

const BUSYBOX = KIT_IMAGES.busybox;
// The test's time counts the wait for the kubelet lock (up to 1500 s while another kubelet runs here).
const LOCK_WAIT_MS = 1500_000;
const small = { requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '64Mi' } };

/** The host end of the pod network: the bridge's address, the first of the subnet. */
function gateway(subnet: string): string {
  const [a, b, c, d] = subnet.split('/')[0].split('.').map(Number);
  return `${a}.${b}.${c}.${d + 1}`;
}

test('/stats/summary from skiffd stats RPCs (PodAndContainerStatsFromCRI)', { timeout: LOCK_WAIT_MS + 6 * 60_000 }, async (t) => {
  // Traffic for the pod's network counters: the pod fetches a page from the host over its eth0.
  const server = createServer((_req, res) => res.end('x'.repeat(2000)));
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.address() as AddressInfo).port;

  // skiffd as a node installs it: the bundle dist/skiffd.cjs, built here.
  const dist = mkdtempSync(join(tmpdir(), 'skiff-kubelet-node-'));
  t.after(() => rmSync(dist, { recursive: true, force: true }));
  const built = await build({ outdir: join(dist, 'dist'), sea: false, quiet: true });
  const node = await startKubeletNode(t, {
    skiffdCommand: [process.execPath, built.cjs],
    featureGates: { PodAndContainerStatsFromCRI: true },
  });
  if (!node) return;
  t.after(() => node.cleanup());

  const url = `http://${gateway(node.network.subnet)}:${port}/`;
  const full = node.writePod({
    metadata: { name: 'stats' },
    spec: {
      terminationGracePeriodSeconds: 2,
      containers: [
        {
          name: 'client',
          image: BUSYBOX,
          command: ['sh', '-c', `head -c 262144 /dev/zero > /junk; while true; do wget -q -O /dev/null ${url}; echo fetched; sleep 0.5; done`],
          resources: small,
        },
        { name: 'idle', image: BUSYBOX, command: ['sleep', '3600'], resources: small },
      ],
    },
  });
  // On the node's network, with a PID namespace of its own: no network of its own to report.
  const hostNet = node.writePod({
    metadata: { name: 'stats-host' },
    spec: {
      terminationGracePeriodSeconds: 1,
      hostNetwork: true,
      shareProcessNamespace: true,
      containers: [{ name: 'idle', image: BUSYBOX, command: ['sleep', '3600'], resources: small }],
    },
  });
  const pod = await node.waitForPod(full, 'Ready', isReady);
  const uid = pod.metadata.uid;

  const fromSkiffd = async (): Promise<PodSandboxStats> => {
    const { stats } = await node.runtime.listPodSandboxStats({});
    const mine = stats.find((s) => s.attributes?.metadata?.uid === uid);
    assert.ok(mine, `skiffd has stats for the pod ${uid}`);
    return mine;
  };
  const fromKubelet = async (): Promise<StatsPod | undefined> => (await node.summary()).pods?.find((p) => p.podRef.uid === uid);

  // Wait until the pod has fetched over the network and its containers have been sampled twice (rates).
  await until(
    'the summary to show both containers, their CPU rates and the pod network',
    async () => {
      const s = await fromKubelet();
      const client = s?.containers?.find((c) => c.name === 'client');
      return (
        s?.containers?.length === 2 &&
        client?.cpu?.usageNanoCores !== undefined &&
        (s.network?.rxBytes ?? 0) > 2000 &&
        (client.rootfs?.usedBytes ?? 0) >= 262144
      );
    },
    90_000,
  );

  const before = await fromSkiffd();
  const s = (await fromKubelet())!;
  const after = await fromSkiffd();
  const between = (what: string, low: bigint | undefined, value: number | undefined, high: bigint | undefined) => {
    assert.ok(low !== undefined && high !== undefined && value !== undefined, `${what}: skiffd ${low}..${high}, summary ${value}`);
    assert.ok(Number(low) <= value && value <= Number(high), `${what}: the summary's ${value} lies between skiffd's ${low} and ${high}`);
  };

  // Pod level: CPU, memory, processes and network, all from PodSandboxStats.
  between(
    'pod cpu usageCoreNanoSeconds',
    before.linux?.cpu?.usageCoreNanoSeconds?.value,
    s.cpu?.usageCoreNanoSeconds,
    after.linux?.cpu?.usageCoreNanoSeconds?.value,
  );
  const m = s.memory;
  for (const key of ['availableBytes', 'usageBytes', 'workingSetBytes', 'rssBytes', 'pageFaults', 'majorPageFaults'] as const) {
    assert.ok(m?.[key] !== undefined, `pod memory ${key}: ${JSON.stringify(m)}`);
  }
  assert.ok(m!.workingSetBytes! > 0 && m!.availableBytes! > 0 && m!.availableBytes! <= 128 * 2 ** 20, `pod memory ${JSON.stringify(m)}`);
  between('pod page faults', before.linux?.memory?.pageFaults?.value, m!.pageFaults, after.linux?.memory?.pageFaults?.value);
  assert.ok((s.process_stats?.process_count ?? 0) >= 2, `pod processes ${JSON.stringify(s.process_stats)}`);
  assert.equal(s.network?.name, 'eth0');
  const net = (p: PodSandboxStats) => p.linux?.network?.defaultInterface;
  between('pod network rxBytes', net(before)?.rxBytes?.value, s.network?.rxBytes, net(after)?.rxBytes?.value);
  between('pod network txBytes', net(before)?.txBytes?.value, s.network?.txBytes, net(after)?.txBytes?.value);
  assert.ok((s.network?.rxBytes ?? 0) > 2000 && (s.network?.txBytes ?? 0) > 0, `pod network ${JSON.stringify(s.network)}`);

  // Container level: the containers skiffd lists inside the pod's stats, each complete.
  const idOf = (name: string) => pod.status.containerStatuses?.find((c) => c.name === name)?.containerID?.replace(/^[a-z]+:\/\//, '');
  assert.deepEqual(s.containers?.map((c) => c.name).sort(), ['client', 'idle']);
  for (const c of s.containers ?? []) {
    const what = `container ${c.name}`;
    const inPod = (p: PodSandboxStats) => p.linux?.containers.find((x) => x.attributes?.id === idOf(c.name));
    between(
      `${what} cpu usageCoreNanoSeconds`,
      inPod(before)?.cpu?.usageCoreNanoSeconds?.value,
      c.cpu?.usageCoreNanoSeconds,
      inPod(after)?.cpu?.usageCoreNanoSeconds?.value,
    );
    assert.ok(c.cpu?.usageNanoCores !== undefined, `${what}: cpu usageNanoCores`);
    assert.ok((c.memory?.workingSetBytes ?? 0) > 0, `${what}: memory ${JSON.stringify(c.memory)}`);
    assert.ok(
      c.rootfs?.usedBytes !== undefined && (c.rootfs.capacityBytes ?? 0) > 0 && c.rootfs.inodesUsed !== undefined,
      `${what}: rootfs ${JSON.stringify(c.rootfs)}`,
    );
    assert.ok(c.logs?.usedBytes !== undefined && (c.logs.capacityBytes ?? 0) > 0, `${what}: logs ${JSON.stringify(c.logs)}`);
  }
  const client = s.containers!.find((c) => c.name === 'client')!;
  assert.ok(client.rootfs!.usedBytes! >= 262144, `the 256 KiB the client wrote shows in its rootfs (${client.rootfs!.usedBytes})`);
  assert.ok(client.logs!.usedBytes! > 0, `the client's log lines show in its logs (${client.logs!.usedBytes})`);
  const hostPod = await node.waitForPod(hostNet, 'Ready', isReady);
  const hostStats = await until('the summary to list the host-network pod', async () =>
    (await node.summary()).pods?.find((p) => p.podRef.uid === hostPod.metadata.uid),
  );
  assert.equal(
    hostStats.network,
    undefined,
    `a pod on the node's network shows no pod network (the node's is not its own): ${JSON.stringify(hostStats.network)}`,
  );
  const eph = s['ephemeral-storage'];
  assert.ok((eph?.usedBytes ?? 0) >= 262144, `pod ephemeral-storage counts its containers' rootfs and logs: ${JSON.stringify(eph)}`);
});
