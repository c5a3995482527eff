// The cAdvisor-style pod metrics (ListMetricDescriptors, ListPodSandboxMetrics, StreamPodSandboxMetrics)
// of a real pod on a private CNI network, with a container under runc and conmon that burns CPU under a
// CFS quota, holds memory and writes to its writable layer; then the same through `crictl metricsp`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { readFileSync } from 'node:fs';
import {
  ContainerState,
  MetricType,
  NamespaceMode,
  type ContainerConfig,
  type DeepPartial,
  type Metric,
  type PodSandboxMetrics,
} from '../../proto/gen/runtime/v1/api.ts';
import { cgroupLayout } from '../../node/skiffd/cgroups/layout.ts';
import { buildImage, buildTar, busyboxBaseEntries, Pusher } from '../support/image-builder.ts';
import { crictlBin } from '../support/cri-conformance.ts';
import { runCommand } from '../support/commands.ts';
import { skiffdNetworkConfig } from '../support/netns.ts';
import { startPodWorld } from '../support/pod-world.ts';
import { podConfig } from '../support/pods.ts';
import { needs } from '../support/prereq.ts';
import { startSkiffd } from '../support/skiffd.ts';
import { until } from '../support/wait.ts';

const PREREQS = { root: true, commands: ['runc', 'conmon', 'unshare', 'nsenter', '/usr/lib/cni/bridge', '/usr/bin/docker-registry', crictlBin] };
const MEMORY_LIMIT = 64n << 20n;
const HELD = 8_000_000;

/** The one sample of `name` whose extra labels (after id, name, image, container, pod, namespace) are `extra`. */
function one(metrics: Metric[], family: string, extra: string[] = []): Metric | undefined {
  const found = metrics.filter((m) => m.name === family && m.labelValues.slice(6).join('\0') === extra.join('\0'));
  assert.ok(found.length <= 1, `${family}{${extra}} appears ${found.length} times`);
  return found[0];
}

function sampleValue(metrics: Metric[], family: string, extra: string[] = []): bigint {
  const m = one(metrics, family, extra);
  assert.ok(m, `no ${family}{${extra}} among ${[...new Set(metrics.map((x) => x.name))].join(', ')}`);
  return m.value!.value;
}

test('pod metrics: descriptors, cgroup and network samples of a running pod, crictl metricsp', { timeout: 180_000 }, async (t) => {
  if (!needs(t, PREREQS)) return;
  const { net, registry, cleanups } = await startPodWorld(t, 'skiff-podmetrics-');
  const image = buildImage({ format: 'oci', layers: [await buildTar(busyboxBaseEntries())], env: ['PATH=/bin'] });
  const pusher = new Pusher(registry.url);
  for (const b of [image.config, ...image.layers]) await pusher.blob('skiff/busybox', b);
  await pusher.manifest('skiff/busybox', '1', image.manifest);
  const ref = `${registry.host}/skiff/busybox:1`;

  const d = await startSkiffd({ config: `${skiffdNetworkConfig(net)}\n[registry.configs."${registry.host}"]\ninsecure = true\n` });
  cleanups.push(() => d.cleanup());
  cleanups.push(async () => {
    for (const p of (await d.runtime.listPodSandbox({})).items) await d.runtime.removePodSandbox({ podSandboxId: p.id });
  });
  await d.images.pullImage({ image: { image: ref } });

  const podCfg = podConfig('metered');
  const { podSandboxId } = await d.runtime.runPodSandbox({ config: podCfg });
  const ctr = (name: string, extra: DeepPartial<ContainerConfig>): DeepPartial<ContainerConfig> => ({
    metadata: { name, attempt: 0 },
    image: { image: ref, userSpecifiedImage: ref },
    ...extra,
  });
  // Half a CPU at most, 8 MB held in a shell variable, 100 kB written to the writable layer, then a busy loop.
  const burner = (
    await d.runtime.createContainer({
      podSandboxId,
      sandboxConfig: podCfg,
      config: ctr('burner', {
        command: ['sh', '-c', `busybox head -c 100000 /dev/zero > /tmp/blob; x=$(busybox head -c ${HELD} /dev/zero | busybox tr '\\0' a); while :; do :; done`],
        // No swap beyond the memory limit, as the kubelet asks on a node without swap.
        linux: {
          resources: { memoryLimitInBytes: MEMORY_LIMIT, memorySwapLimitInBytes: MEMORY_LIMIT, cpuShares: 512n, cpuQuota: 50_000n, cpuPeriod: 100_000n },
        },
      }),
    })
  ).containerId;
  await d.runtime.startContainer({ containerId: burner });
  const done = (await d.runtime.createContainer({ podSandboxId, sandboxConfig: podCfg, config: ctr('done', { command: ['true'] }) })).containerId;
  await d.runtime.startContainer({ containerId: done });
  await until(
    'the short container to exit',
    async () => (await d.runtime.containerStatus({ containerId: done })).status!.state === ContainerState.CONTAINER_EXITED,
  );

  const descriptors = (await d.runtime.listMetricDescriptors({})).descriptors;
  const keys = new Map(descriptors.map((x) => [x.name, x.labelKeys]));
  assert.equal(keys.size, descriptors.length, 'descriptor names are unique');
  for (const x of descriptors) {
    assert.match(x.name, /^container_[a-z0-9_]+$/);
    assert.ok(x.help.length > 5, `${x.name} has help`);
    assert.deepEqual(x.labelKeys.slice(0, 3), ['id', 'name', 'image']);
  }
  for (const name of [
    'container_cpu_usage_seconds_total',
    'container_cpu_user_seconds_total',
    'container_cpu_system_seconds_total',
    'container_cpu_cfs_periods_total',
    'container_cpu_cfs_throttled_periods_total',
    'container_cpu_cfs_throttled_seconds_total',
    'container_memory_usage_bytes',
    'container_memory_working_set_bytes',
    'container_memory_rss',
    'container_memory_cache',
    'container_memory_swap',
    'container_memory_failcnt',
    'container_memory_failures_total',
    'container_spec_memory_limit_bytes',
    'container_spec_cpu_shares',
    'container_spec_cpu_quota',
    'container_spec_cpu_period',
    'container_oom_events_total',
    'container_processes',
    'container_threads',
    'container_start_time_seconds',
    'container_last_seen',
    'container_fs_usage_bytes',
    'container_network_receive_bytes_total',
    'container_network_receive_packets_total',
    'container_network_receive_errors_total',
    'container_network_receive_packets_dropped_total',
    'container_network_transmit_bytes_total',
    'container_network_transmit_packets_total',
    'container_network_transmit_errors_total',
    'container_network_transmit_packets_dropped_total',
  ])
    assert.ok(keys.has(name), `${name} is described`);
  assert.deepEqual(keys.get('container_cpu_usage_seconds_total'), ['id', 'name', 'image', 'container', 'pod', 'namespace', 'cpu']);
  assert.deepEqual(keys.get('container_memory_failures_total'), ['id', 'name', 'image', 'container', 'pod', 'namespace', 'failure_type', 'scope']);
  assert.deepEqual(keys.get('container_network_receive_bytes_total'), ['id', 'name', 'image', 'container', 'pod', 'namespace', 'interface']);

  const list = async (): Promise<PodSandboxMetrics[]> => (await d.runtime.listPodSandboxMetrics({})).podMetrics;
  const podOf = (all: PodSandboxMetrics[], id = podSandboxId) => all.find((p) => p.podSandboxId === id);
  const burnerOf = (p: PodSandboxMetrics | undefined) => p?.containerMetrics.find((c) => c.containerId === burner)?.metrics ?? [];
  const cpuSeconds = (p: PodSandboxMetrics | undefined) => one(burnerOf(p), 'container_cpu_usage_seconds_total', ['total'])?.value?.value ?? 0n;

  // Whole seconds: at half a CPU the first one takes at least two seconds of wall time.
  const before = BigInt(Date.now()) * 1_000_000n;
  const first = await until(
    'the burner to use a whole CPU second',
    async () => {
      const p = podOf(await list());
      return cpuSeconds(p) > 0n && sampleValue(burnerOf(p), 'container_memory_usage_bytes') > BigInt(HELD) ? p : undefined;
    },
    60_000,
  );
  const after = BigInt(Date.now()) * 1_000_000n;
  assert.ok(first);
  // What /proc says is counted at most every 10 s per cgroup, so the shell's start-up pipeline may
  // still be in the first counts: wait for the busy shell alone, always runnable (a throttled task stays
  // runnable), in the container's counts and in the pod's.
  const settled = await until(
    'the busy shell alone in the counts from /proc',
    async () => {
      const p = podOf(await list());
      const m = burnerOf(p);
      const v = (metrics: Metric[], family: string, extra: string[] = []) => one(metrics, family, extra)?.value?.value;
      const alone =
        v(m, 'container_tasks_state', ['running']) === 1n &&
        v(m, 'container_tasks_state', ['sleeping']) === 0n &&
        Math.abs(Number(v(m, 'container_cpu_load_average_10s') ?? 0n) - 1000) <= 100 &&
        v(p?.metrics ?? [], 'container_processes') === 1n;
      return alone ? p : undefined;
    },
    60_000,
  );

  await t.test('every sample has a descriptor, its labels and a type', () => {
    const all = [...first.metrics, ...first.containerMetrics.flatMap((c) => c.metrics)];
    // Every family is served here, but for those an older kernel or a host without the pids controller cannot tell.
    const optional = [
      'container_memory_max_usage_bytes',
      'container_memory_kernel_usage',
      'container_oom_events_total',
      'container_threads',
      'container_threads_max',
    ];
    // Pressure exists on cgroup v2 hosts only; per-device I/O only once the container did block I/O that
    // its cgroup counts (Linux 6.x counts none on v1 without a throttle rule).
    for (const r of ['cpu', 'memory', 'io']) optional.push(`container_pressure_${r}_waiting_seconds_total`, `container_pressure_${r}_stalled_seconds_total`);
    optional.push(
      'container_fs_reads_bytes_total',
      'container_fs_writes_bytes_total',
      'container_fs_reads_total',
      'container_fs_writes_total',
      'container_blkio_device_usage_total',
    );
    const served = new Set(all.map((m) => m.name));
    assert.deepEqual(
      [...keys.keys()].filter((name) => !served.has(name) && !optional.includes(name)),
      [],
      'families described but not served',
    );
    const series = new Set<string>();
    for (const m of all) {
      const labelKeys = keys.get(m.name);
      assert.ok(labelKeys, `${m.name} has a descriptor`);
      assert.equal(m.labelValues.length, labelKeys.length, `${m.name}: ${m.labelValues} for ${labelKeys}`);
      assert.ok(m.metricType === MetricType.COUNTER || m.metricType === MetricType.GAUGE);
      assert.equal(
        m.metricType,
        m.name.endsWith('_total') ? MetricType.COUNTER : m.name === 'container_memory_failcnt' ? MetricType.COUNTER : MetricType.GAUGE,
        m.name,
      );
      assert.ok(m.value, `${m.name} has a value`);
      assert.ok(m.timestamp >= before - 1_000_000_000n && m.timestamp <= after + 1_000_000_000n, `${m.name} timestamp ${m.timestamp}`);
      const key = `${m.name}{${m.labelValues.join(',')}}`;
      assert.ok(!series.has(key), `${key} appears once`);
      series.add(key);
    }
  });

  await t.test('running containers only, labelled with their id, name and image', () => {
    assert.deepEqual(
      first.containerMetrics.map((c) => c.containerId),
      [burner],
      'the exited container has no metrics',
    );
    for (const m of burnerOf(first)) {
      assert.equal(m.labelValues[0], burner);
      assert.match(m.labelValues[1], /^burner_metered_skiff-test_/);
      assert.equal(m.labelValues[2], ref);
      assert.deepEqual(m.labelValues.slice(3, 6), ['burner', 'metered', 'skiff-test'], 'container, pod and namespace, as cAdvisor labels them');
    }
  });

  await t.test('cgroup values: CPU under its quota, memory held, limits as set, processes, layer usage', async () => {
    const m = burnerOf(first);
    assert.ok(sampleValue(m, 'container_cpu_usage_seconds_total', ['total']) >= 1n);
    one(m, 'container_cpu_user_seconds_total') ?? assert.fail('user seconds');
    one(m, 'container_cpu_system_seconds_total') ?? assert.fail('system seconds');
    assert.ok(sampleValue(m, 'container_cpu_cfs_periods_total') > 0n, 'CFS periods elapse under a quota');
    assert.ok(sampleValue(m, 'container_cpu_cfs_throttled_periods_total') <= sampleValue(m, 'container_cpu_cfs_periods_total'));
    const usage = sampleValue(m, 'container_memory_usage_bytes');
    assert.ok(usage > BigInt(HELD), `the ${HELD} bytes held are charged: ${usage}`);
    assert.ok(usage < MEMORY_LIMIT);
    const workingSet = sampleValue(m, 'container_memory_working_set_bytes');
    assert.ok(workingSet > 0n && workingSet <= usage);
    assert.ok(sampleValue(m, 'container_memory_rss') >= BigInt(HELD), 'the shell variable is anonymous memory');
    sampleValue(m, 'container_memory_cache');
    sampleValue(m, 'container_memory_swap');
    assert.equal(sampleValue(m, 'container_memory_failcnt'), 0n);
    assert.ok(sampleValue(m, 'container_memory_failures_total', ['pgfault', 'container']) > 0n);
    assert.equal(
      sampleValue(m, 'container_memory_failures_total', ['pgfault', 'hierarchy']),
      sampleValue(m, 'container_memory_failures_total', ['pgfault', 'container']),
    );
    assert.equal(sampleValue(m, 'container_oom_events_total'), 0n);
    assert.equal(sampleValue(m, 'container_spec_memory_limit_bytes'), MEMORY_LIMIT);
    assert.equal(sampleValue(m, 'container_spec_cpu_shares'), 512n);
    assert.equal(sampleValue(m, 'container_spec_cpu_quota'), 50_000n);
    assert.equal(sampleValue(m, 'container_spec_cpu_period'), 100_000n);
    assert.equal(sampleValue(m, 'container_processes'), 1n, 'only the busy shell is left');
    const threads = one(m, 'container_threads');
    if (threads) assert.equal(threads.value!.value, 1n);
    assert.ok(sampleValue(m, 'container_fs_usage_bytes') >= 100_000n, 'the file written to the writable layer counts');
    const status = (await d.runtime.containerStatus({ containerId: burner })).status!;
    assert.equal(sampleValue(m, 'container_start_time_seconds'), status.startedAt / 1_000_000_000n);
    assert.ok(sampleValue(m, 'container_last_seen') >= status.startedAt / 1_000_000_000n);
    // From its processes, once they are the busy shell alone.
    const p = burnerOf(settled);
    assert.ok(sampleValue(p, 'container_file_descriptors') >= 3n, 'stdin, stdout and stderr at least');
    assert.equal(sampleValue(p, 'container_sockets'), 0n);
    assert.equal(sampleValue(p, 'container_tasks_state', ['running']), 1n);
    for (const state of ['sleeping', 'stopped', 'uninterruptible']) assert.equal(sampleValue(p, 'container_tasks_state', [state]), 0n, state);
    const load = Number(sampleValue(p, 'container_cpu_load_average_10s'));
    assert.ok(load >= 900 && load <= 1100, `one runnable thread, in thousandths: ${load}`);
    assert.equal(sampleValue(p, 'container_cpu_load_d_average_10s'), 0n);
    const { pid } = JSON.parse((await d.runtime.containerStatus({ containerId: burner, verbose: true })).info.info) as { pid: number };
    const nofile = /^Max open files\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'))?.[1];
    assert.equal(sampleValue(p, 'container_ulimits_soft', ['max_open_files']), BigInt(nofile ?? -1), "the shell's soft RLIMIT_NOFILE");
    // Memory the kernel splits out, and no reservation asked for.
    assert.ok(sampleValue(m, 'container_memory_total_inactive_file_bytes') + sampleValue(m, 'container_memory_total_active_file_bytes') <= usage);
    assert.equal(sampleValue(m, 'container_spec_memory_reservation_limit_bytes'), 0n);
  });

  await t.test("the pod cgroup's own series: its containers together, its limits, labelled without a container name", () => {
    const own = settled.metrics.filter((x) => !x.name.startsWith('container_network_'));
    for (const x of own) assert.deepEqual(x.labelValues.slice(0, 6), [podSandboxId, 'POD', '', '', 'metered', 'skiff-test'], x.name);
    const m = burnerOf(settled);
    // Whole seconds, read one file after the other: the busy shell may cross a second in between.
    assert.ok(sampleValue(own, 'container_cpu_usage_seconds_total', ['total']) + 1n >= sampleValue(m, 'container_cpu_usage_seconds_total', ['total']));
    assert.ok(sampleValue(own, 'container_memory_usage_bytes') >= sampleValue(m, 'container_memory_usage_bytes'));
    assert.equal(sampleValue(own, 'container_processes'), 1n, "the burner's shell, found in the container's cgroup below the pod's");
    assert.ok(sampleValue(own, 'container_file_descriptors') >= sampleValue(m, 'container_file_descriptors'));
    assert.equal(sampleValue(own, 'container_tasks_state', ['running']), 1n);
    sampleValue(own, 'container_spec_cpu_shares');
    sampleValue(own, 'container_spec_memory_limit_bytes');
    assert.ok(sampleValue(own, 'container_start_time_seconds') <= sampleValue(m, 'container_start_time_seconds'));
  });

  await t.test('ContainerStats and PodSandboxStats: swap under its limit; pressure and I/O usage on cgroup v2 only', async () => {
    const v2 = cgroupLayout().mode === 'v2';
    const stats = (await d.runtime.containerStats({ containerId: burner })).stats!;
    assert.equal(stats.swap?.swapUsageBytes?.value, 0n, 'nothing swapped');
    // runc gives v2 the swap beyond the memory limit (none); v1 bounds memory plus swap.
    assert.equal(stats.swap?.swapAvailableBytes?.value, v2 ? 0n : MEMORY_LIMIT);
    const pod = (await d.runtime.podSandboxStats({ podSandboxId })).stats!.linux!;
    if (!v2) {
      // As containerd and cAdvisor on a v1 or hybrid host.
      assert.equal(stats.cpu?.psi, undefined);
      assert.equal(stats.memory?.psi, undefined);
      assert.equal(stats.io, undefined);
      assert.equal(pod.cpu?.psi, undefined);
      assert.equal(pod.io, undefined);
      for (const m of burnerOf(first)) assert.doesNotMatch(m.name, /^container_pressure_/);
      return;
    }
    for (const psi of [stats.cpu?.psi, stats.memory?.psi, stats.io?.psi, pod.cpu?.psi, pod.memory?.psi, pod.io?.psi]) {
      assert.ok(psi?.Some && psi.Full, 'some and full');
      assert.equal(psi.Some.Total % 1000n, 0n, 'microseconds in nanoseconds');
    }
    // Under its CFS quota the burner's one busy loop is throttled, not waiting: only presence is certain.
    sampleValue(burnerOf(first), 'container_pressure_cpu_waiting_seconds_total');
    sampleValue(burnerOf(first), 'container_pressure_io_stalled_seconds_total');
  });

  await t.test('CPU counters grow while the container runs', async () => {
    const start = cpuSeconds(first);
    const later = await until(
      'the CPU seconds to grow',
      async () => {
        const p = podOf(await list());
        return cpuSeconds(p) > start ? p : undefined;
      },
      60_000,
    );
    assert.ok(sampleValue(burnerOf(later), 'container_cpu_cfs_periods_total') > sampleValue(burnerOf(first), 'container_cpu_cfs_periods_total'));
  });

  await t.test('network counters of the pod interface grow with traffic to the pod', async () => {
    const ip = (await d.runtime.podSandboxStatus({ podSandboxId })).status!.network!.ip;
    assert.ok(ip);
    const rx = (p: PodSandboxMetrics | undefined) => (p ? sampleValue(p.metrics, 'container_network_receive_bytes_total', ['eth0']) : 0n);
    const packets = (p: PodSandboxMetrics | undefined) => (p ? sampleValue(p.metrics, 'container_network_receive_packets_total', ['eth0']) : 0n);
    const base = podOf(await list())!;
    for (const m of base.metrics) {
      assert.deepEqual(m.labelValues.slice(0, 4), [podSandboxId, 'POD', '', '']);
      assert.notEqual(m.labelValues[6], 'lo', 'loopback is not reported');
    }
    sampleValue(base.metrics, 'container_network_transmit_bytes_total', ['eth0']);
    sampleValue(base.metrics, 'container_network_receive_errors_total', ['eth0']);
    sampleValue(base.metrics, 'container_network_transmit_packets_dropped_total', ['eth0']);
    const socket = createSocket('udp4');
    t.after(() => socket.close());
    const payload = Buffer.alloc(1000, 1);
    for (let i = 0; i < 20; i++) await new Promise<void>((resolve, reject) => socket.send(payload, 9, ip, (err) => (err ? reject(err) : resolve())));
    const grown = await until('the pod to count the datagrams', async () => {
      const p = podOf(await list());
      return rx(p) >= rx(base) + 20_000n ? p : undefined;
    });
    assert.ok(packets(grown) >= packets(base) + 20n);
  });

  await t.test('StreamPodSandboxMetrics sends the same pods, one per message', async () => {
    // A host-network pod with its own PID namespace: its init sees the node's interfaces, which are no pod's.
    const other = (await d.runtime.runPodSandbox({ config: podConfig('second', { network: NamespaceMode.NODE, pid: NamespaceMode.POD }) })).podSandboxId;
    try {
      const messages = [];
      for await (const msg of d.runtime.streamPodSandboxMetrics({}, { signal: AbortSignal.timeout(20_000) })) messages.push(msg);
      assert.deepEqual(
        messages.map((msg) => msg.podSandboxMetrics.map((p) => p.podSandboxId)),
        [[podSandboxId], [other]],
      );
      assert.deepEqual(
        messages[1].podSandboxMetrics[0].metrics.filter((m) => m.name.startsWith('container_network_')),
        [],
        'a host-network pod has no network metrics',
      );
      assert.deepEqual(messages[1].podSandboxMetrics[0].containerMetrics, []);
      assert.deepEqual(
        burnerOf(messages[0].podSandboxMetrics[0])
          .map((m) => m.name)
          .sort(),
        burnerOf(podOf(await list()))
          .map((m) => m.name)
          .sort(),
      );
      await d.runtime.stopPodSandbox({ podSandboxId: other });
      assert.equal(podOf(await list(), other), undefined, 'a stopped pod has no metrics');
    } finally {
      await d.runtime.removePodSandbox({ podSandboxId: other });
    }
    assert.equal(podOf(await list(), other), undefined);
  });

  await t.test('crictl metricsp prints them', async () => {
    const out = await runCommand(crictlBin, ['--runtime-endpoint', `unix://${d.socket}`, '--timeout', '20s', 'metricsp', '-o', 'json'], { timeoutMs: 30_000 });
    assert.equal(out.code, 0, out.stderr);
    type JsonMetric = { name: string; labelValues: string[]; value?: { value?: string }; metricType?: string };
    const parsed = JSON.parse(out.stdout) as {
      podMetrics: { podSandboxId: string; metrics?: JsonMetric[]; containerMetrics?: { containerId: string; metrics: JsonMetric[] }[] }[];
    };
    assert.deepEqual(
      parsed.podMetrics.map((p) => p.podSandboxId),
      [podSandboxId],
    );
    const pod = parsed.podMetrics[0];
    assert.deepEqual(
      pod.containerMetrics?.map((c) => c.containerId),
      [burner],
    );
    const metrics = pod.containerMetrics![0].metrics;
    const limit = metrics.find((m) => m.name === 'container_spec_memory_limit_bytes');
    assert.equal(limit?.value?.value, String(MEMORY_LIMIT));
    assert.equal(limit?.metricType, 'GAUGE');
    const cpu = metrics.find((m) => m.name === 'container_cpu_usage_seconds_total');
    assert.deepEqual([cpu?.labelValues[2], cpu?.labelValues.at(-1)], [ref, 'total']);
    assert.ok(Number(cpu?.value?.value) >= 1);
    assert.ok(pod.metrics?.some((m) => m.name === 'container_network_receive_bytes_total' && m.labelValues[6] === 'eth0'));
  });

  await t.test('a removed pod disappears', async () => {
    await d.runtime.removePodSandbox({ podSandboxId });
    assert.deepEqual(await list(), []);
  });
});
