// Containers through the CRI gRPC API of a real skiffd: an image pulled from a local registry, a pod
// on a private CNI network with a shared PID namespace, containers joining the pod's namespaces,
// logs, ExecSync, stats, resource updates, events, stop signals from the image, kill -9 of the daemon,
// and pod removal taking its containers along.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Status } from 'nice-grpc';
import {
  ContainerEventType,
  ContainerState,
  NamespaceMode,
  type ContainerConfig,
  type ContainerEventResponse,
  type DeepPartial,
  type PodSandboxConfig,
} from '../../proto/gen/runtime/v1/api.ts';
import { needs } from '../support/prereq.ts';
import { startSkiffd, type SkiffdHandle } from '../support/skiffd.ts';
import { buildImage, buildTar, busyboxBaseEntries, Pusher } from '../support/image-builder.ts';
import { skiffdNetworkConfig } from '../support/netns.ts';
import { grpcCode, podConfig, type PodInfo } from '../support/pods.ts';
import { until } from '../support/wait.ts';
import { startPodWorld } from '../support/pod-world.ts';

const PREREQS = { root: true, commands: ['runc', 'conmon', 'unshare', 'catatonit', '/usr/lib/cni/bridge', '/usr/bin/docker-registry'] };

function logLines(path: string): { stream: string; tag: string; text: string }[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+(?:Z|[+-]\d\d:\d\d)) (stdout|stderr) ([FP]) (.*)$/.exec(line);
      assert.ok(m, `not a CRI log line: ${JSON.stringify(line)}`);
      return { stream: m[2], tag: m[3], text: m[4] };
    });
}

test('containers over CRI: pod namespaces, logs, exec, stats, update, events, stop signal, kill -9, pod removal', { timeout: 180_000 }, async (t) => {
  if (!needs(t, PREREQS)) return;
  const { dir, net, registry, cleanups } = await startPodWorld(t, 'skiff-ctr-');

  // An image whose stop signal is SIGUSR1 and whose env and cmd the containers inherit.
  const image = buildImage({
    format: 'oci',
    layers: [await buildTar(busyboxBaseEntries())],
    env: ['PATH=/bin', 'FROM_IMAGE=yes'],
    cmd: ['/bin/sh', '-c', 'echo default cmd'],
    stopSignal: 'SIGUSR1',
  });
  const pusher = new Pusher(registry.url);
  for (const b of [image.config, ...image.layers]) await pusher.blob('skiff/busybox', b);
  await pusher.manifest('skiff/busybox', '1', image.manifest);
  const ref = `${registry.host}/skiff/busybox:1`;

  const config = `${skiffdNetworkConfig(net)}\n[registry.configs."${registry.host}"]\ninsecure = true\n`;
  let d: SkiffdHandle = await startSkiffd({ config });
  const first = d;
  // Cleanups run newest first: the pods go through whichever daemon runs then (the restarted one, later),
  // then that daemon stops, then the first one's handle removes the temp dir.
  cleanups.push(() => first.cleanup());
  cleanups.push(() => d.cleanup());
  cleanups.push(async () => {
    for (const p of (await d.runtime.listPodSandbox({})).items) await d.runtime.removePodSandbox({ podSandboxId: p.id });
  });
  const pulled = await d.images.pullImage({ image: { image: ref } });
  assert.ok(pulled.imageRef);

  const logDir = join(dir, 'logs');
  const podCfg: DeepPartial<PodSandboxConfig> = podConfig('ctrpod', { pid: NamespaceMode.POD, logDirectory: logDir, hostname: 'ctrpod-host' });
  const { podSandboxId } = await d.runtime.runPodSandbox({ config: podCfg });
  const podInfo = JSON.parse((await d.runtime.podSandboxStatus({ podSandboxId, verbose: true })).info.info) as PodInfo;

  // Events from here on.
  const events: ContainerEventResponse[] = [];
  const abort = new AbortController();
  const stream = (async () => {
    try {
      for await (const e of d.runtime.getContainerEvents({}, { signal: abort.signal })) events.push(e);
    } catch {
      /* aborted */
    }
  })();

  const ctr = (name: string, extra: DeepPartial<ContainerConfig> = {}): DeepPartial<ContainerConfig> => ({
    metadata: { name, attempt: 0 },
    image: { image: ref },
    logPath: `${name}/0.log`,
    labels: { app: name, suite: 'cri' },
    annotations: { 'skiff.test/name': name },
    linux: { securityContext: { namespaceOptions: { pid: NamespaceMode.POD, network: NamespaceMode.POD, ipc: NamespaceMode.POD } } },
    ...extra,
  });
  const create = async (name: string, extra: DeepPartial<ContainerConfig> = {}) =>
    (await d.runtime.createContainer({ podSandboxId, config: ctr(name, extra), sandboxConfig: podCfg })).containerId;
  const status = async (id: string) => (await d.runtime.containerStatus({ containerId: id })).status!;
  const waitExited = (id: string) =>
    until(`container ${id.slice(0, 12)} to exit`, async () => ((await status(id)).state === ContainerState.CONTAINER_EXITED ? status(id) : undefined));

  // The image's cmd runs when the config gives no command; exit codes map to reasons.
  const dflt = await create('dflt');
  const ok = await create('ok', { command: ['sh', '-c', 'echo "env=$FROM_IMAGE host=$(cat /proc/sys/kernel/hostname)"; echo to-stderr >&2'] });
  const bad = await create('bad', { command: ['sh', '-c'], args: ['exit 3'] });
  for (const id of [dflt, ok, bad]) await d.runtime.startContainer({ containerId: id });
  const [sd, sok, sbad] = [await waitExited(dflt), await waitExited(ok), await waitExited(bad)];
  assert.deepEqual([sd.exitCode, sd.reason], [0, 'Completed']);
  assert.deepEqual([sok.exitCode, sok.reason], [0, 'Completed']);
  assert.deepEqual([sbad.exitCode, sbad.reason], [3, 'Error']);
  assert.equal(sok.logPath, join(logDir, 'ok/0.log'));
  assert.ok(sok.finishedAt >= sok.startedAt && sok.startedAt >= sok.createdAt && sok.createdAt > 0n);
  assert.equal(sok.imageId, pulled.imageRef, 'image_id matches PullImageResponse.image_ref');
  assert.match(sok.imageRef, /@sha256:[a-f0-9]{64}$/, 'image_ref is a digested reference');
  assert.equal(sok.image?.image, ref);
  // A kubelet creates containers by image id: the status names the image by its tag, as containerd does
  // (the pod status shows it), while ListContainers keeps the name the container was created with.
  const byId = (await d.runtime.createContainer({ podSandboxId, config: ctr('by-id', { image: { image: pulled.imageRef } }), sandboxConfig: podCfg }))
    .containerId;
  assert.equal((await status(byId)).image?.image, ref);
  assert.equal((await d.runtime.listContainers({ filter: { id: byId } })).containers[0]?.image?.image, pulled.imageRef);
  await d.runtime.removeContainer({ containerId: byId });
  assert.deepEqual(sok.labels, { app: 'ok', suite: 'cri' });
  assert.deepEqual(sok.annotations, { 'skiff.test/name': 'ok' });
  assert.deepEqual(
    logLines(join(logDir, 'dflt/0.log')).map((l) => l.text),
    ['default cmd'],
  );
  const okLines = logLines(sok.logPath);
  assert.deepEqual(
    okLines.filter((l) => l.stream === 'stdout').map((l) => l.text),
    ['env=yes host=ctrpod-host'],
  );
  assert.deepEqual(
    okLines.filter((l) => l.stream === 'stderr').map((l) => l.text),
    ['to-stderr'],
  );

  // A long-running container in the pod's namespaces.
  const svc = await create('svc', {
    command: ['sh', '-c', 'trap "echo got-usr1; exit 0" USR1; i=0; while true; do i=$((i+1)); echo "tick $i"; sleep 0.1; done'],
    linux: {
      resources: { memoryLimitInBytes: 64n << 20n, cpuShares: 512n },
      securityContext: { namespaceOptions: { pid: NamespaceMode.POD, network: NamespaceMode.POD, ipc: NamespaceMode.POD } },
    },
  });
  await d.runtime.startContainer({ containerId: svc });
  assert.equal((await status(svc)).state, ContainerState.CONTAINER_RUNNING);
  const verbose = JSON.parse((await d.runtime.containerStatus({ containerId: svc, verbose: true })).info.info) as { pid: number; sandboxID: string };
  assert.ok(verbose.pid > 0);
  assert.equal(verbose.sandboxID, podSandboxId);

  const exec = async (cmd: string[], timeout = 5n) => d.runtime.execSync({ containerId: svc, cmd, timeout });
  // Same network and UTS namespace as the pod, PID 1 is the pod's catatonit.
  const netLink = (await exec(['busybox', 'readlink', '/proc/self/ns/net'])).stdout.toString().trim();
  assert.equal(netLink, `net:[${statSync(podInfo.namespaces.net!).ino}]`);
  assert.equal((await exec(['cat', '/proc/1/comm'])).stdout.toString().trim(), 'catatonit');
  // The pod's files and its shared /dev/shm are bind-mounted.
  assert.equal((await exec(['cat', '/etc/hostname'])).stdout.toString(), readFileSync(podInfo.files.hostname, 'utf8'));
  assert.equal((await exec(['cat', '/etc/resolv.conf'])).stdout.toString(), readFileSync(podInfo.files.resolvConf, 'utf8'));
  await exec(['sh', '-c', 'echo shared > /dev/shm/marker']);
  const shm = (podInfo.files as { shm?: string | null }).shm;
  assert.ok(shm, 'the pod has a shm mount');
  assert.equal(readFileSync(join(shm, 'marker'), 'utf8'), 'shared\n');
  const r = await exec(['sh', '-c', 'echo out; echo err >&2; exit 4']);
  assert.deepEqual([r.stdout.toString(), r.stderr.toString(), r.exitCode], ['out\n', 'err\n', 4]);
  const timedOut = await grpcCode(exec(['sleep', '30'], 1n));
  assert.equal(timedOut.code, Status.DEADLINE_EXCEEDED);

  // Stats for one container and for the list, filtered.
  const one = (await d.runtime.containerStats({ containerId: svc })).stats!;
  assert.equal(one.attributes?.id, svc);
  assert.ok((one.cpu?.usageCoreNanoSeconds?.value ?? 0n) > 0n);
  assert.ok((one.memory?.workingSetBytes?.value ?? 0n) > 0n);
  assert.ok(one.writableLayer?.usedBytes !== undefined);
  const listed = (await d.runtime.listContainerStats({ filter: { labelSelector: { app: 'svc' } } })).stats;
  assert.deepEqual(
    listed.map((s) => s.attributes?.id),
    [svc],
  );

  // Resource update shows in the status.
  await d.runtime.updateContainerResources({ containerId: svc, linux: { memoryLimitInBytes: 80n << 20n, cpuShares: 256n } });
  const res = (await status(svc)).resources?.linux;
  assert.equal(res?.memoryLimitInBytes, 80n << 20n);
  assert.equal(res?.cpuShares, 256n);
  await d.runtime.reopenContainerLog({ containerId: svc });

  // List filters.
  const ids = async (filter: object) => (await d.runtime.listContainers({ filter })).containers.map((c) => c.id).sort();
  assert.deepEqual(await ids({ state: { state: ContainerState.CONTAINER_RUNNING } }), [svc]);
  assert.deepEqual(await ids({ labelSelector: { app: 'bad' } }), [bad]);
  assert.deepEqual(await ids({ podSandboxId }), [dflt, ok, bad, svc].sort());
  assert.deepEqual(await ids({ id: svc }), [svc]);
  assert.deepEqual(await ids({ podSandboxId: 'f'.repeat(64) }), []);

  // The Stream* twins answer what their List* calls answer.
  const streamed = async <T>(it: AsyncIterable<T>) => {
    const out: T[] = [];
    for await (const m of it) out.push(m);
    return out;
  };
  const streamedIds = (await streamed(d.runtime.streamContainers({ filter: { podSandboxId } }))).flatMap((m) => m.containers.map((c) => c.id));
  assert.deepEqual(streamedIds.sort(), await ids({ podSandboxId }));
  assert.deepEqual(
    (await streamed(d.runtime.streamPodSandboxes({}))).flatMap((m) => m.podSandboxes.map((p) => p.id)),
    [podSandboxId],
  );
  const listedStats = (await d.runtime.listContainerStats({ filter: { podSandboxId } })).stats.map((s) => s.attributes?.id).sort();
  const streamedStats = (await streamed(d.runtime.streamContainerStats({ filter: { podSandboxId } }))).flatMap((m) =>
    m.containerStats.map((s) => s.attributes?.id),
  );
  assert.deepEqual(streamedStats.sort(), listedStats);
  assert.equal(listedStats.length, 4);
  assert.deepEqual(
    (await streamed(d.runtime.streamPodSandboxStats({}))).flatMap((m) => m.podSandboxStats.map((s) => s.attributes?.id)),
    [podSandboxId],
  );
  // Pod stats carry their containers' stats: the kubelet's CRI stats provider lists a pod's containers
  // in /stats/summary from linux.containers alone.
  const podStats = (await d.runtime.podSandboxStats({ podSandboxId })).stats!;
  assert.deepEqual(podStats.linux?.containers.map((s) => s.attributes?.id).sort(), listedStats);
  const svcInPod = podStats.linux?.containers.find((s) => s.attributes?.id === svc);
  assert.ok((svcInPod?.cpu?.usageCoreNanoSeconds?.value ?? 0n) > 0n, 'the running container has CPU usage in its pod stats');
  assert.ok((svcInPod?.memory?.workingSetBytes?.value ?? 0n) > 0n, 'and a working set');
  const listedPods = (await d.runtime.listPodSandboxStats({})).stats;
  assert.deepEqual(
    listedPods
      .find((p) => p.attributes?.id === podSandboxId)
      ?.linux?.containers.map((s) => s.attributes?.id)
      .sort(),
    listedStats,
  );
  // PodSandboxStatus carries its containers' statuses (kubelet's evented PLEG reads them).
  const inPod = (await d.runtime.podSandboxStatus({ podSandboxId })).containersStatuses;
  assert.deepEqual(inPod.map((c) => c.id).sort(), await ids({ podSandboxId }));
  assert.equal(inPod.find((c) => c.id === svc)?.state, ContainerState.CONTAINER_RUNNING);

  // kill -9 the daemon: svc keeps running, `ends` exits while no daemon is up.
  const ends = await create('ends', { command: ['sh', '-c', 'while [ ! -e /tmp/go ]; do sleep 0.05; done; echo "bye from ends"; exit 9'] });
  await d.runtime.startContainer({ containerId: ends });
  // The image goes while its containers run: their layers must outlive RemoveImage and the restart.
  await d.images.removeImage({ image: { image: ref } });
  assert.equal((await d.images.imageStatus({ image: { image: ref } })).image, undefined);
  // The event stream is its own channel: wait for what it should carry before the crash ends it.
  await until('the stopped event of bad on the event stream', () =>
    events.some((e) => e.containerId === bad && e.containerEventType === ContainerEventType.CONTAINER_STOPPED_EVENT),
  );
  const exit = await d.stop('SIGKILL');
  assert.equal(exit.signal, 'SIGKILL');
  const rootfs = join(first.root, 'containers', ends, 'rootfs');
  writeFileSync(join(rootfs, 'tmp/go'), '');
  await until('ends to exit while skiffd is down', async () => existsSync(join(first.state, 'exits', ends)));
  abort.abort();
  await stream;
  d = await startSkiffd({ config, dir: first.dir });
  assert.equal((await status(svc)).state, ContainerState.CONTAINER_RUNNING, 'svc survived the daemon');
  const se = await status(ends);
  assert.deepEqual([se.state, se.exitCode, se.reason], [ContainerState.CONTAINER_EXITED, 9, 'Error']);
  assert.ok(se.finishedAt > se.startedAt);
  assert.deepEqual(
    logLines(se.logPath).map((l) => l.text),
    ['bye from ends'],
  );
  assert.equal(
    (await exec(['echo', 'after restart'])).stdout.toString(),
    'after restart\n',
    "the removed image's layers are still there for running containers",
  );
  await d.images.pullImage({ image: { image: ref } });

  // Events seen before the crash: created, started and stopped for `bad`, with its status.
  const forBad = events.filter((e) => e.containerId === bad).map((e) => e.containerEventType);
  assert.deepEqual(forBad.slice(0, 3), [
    ContainerEventType.CONTAINER_CREATED_EVENT,
    ContainerEventType.CONTAINER_STARTED_EVENT,
    ContainerEventType.CONTAINER_STOPPED_EVENT,
  ]);
  assert.equal(
    events
      .find((e) => e.containerId === bad && e.containerEventType === ContainerEventType.CONTAINER_STOPPED_EVENT)
      ?.containersStatuses.find((s) => s.id === bad)?.exitCode,
    3,
  );

  // StopContainer sends the image's stop signal (SIGUSR1), which svc traps to exit 0.
  await d.runtime.stopContainer({ containerId: svc, timeout: 10n });
  const ss = await status(svc);
  assert.deepEqual([ss.state, ss.exitCode], [ContainerState.CONTAINER_EXITED, 0]);
  assert.equal(logLines(ss.logPath).at(-1)?.text, 'got-usr1');
  await d.runtime.stopContainer({ containerId: svc, timeout: 0n }); // idempotent

  // Errors.
  const missing = 'e'.repeat(64);
  const nf = await grpcCode(d.runtime.containerStatus({ containerId: missing }));
  assert.equal(nf.code, Status.NOT_FOUND);
  assert.match(nf.details, new RegExp(missing));
  assert.equal((await grpcCode(d.runtime.startContainer({ containerId: missing }))).code, Status.NOT_FOUND);
  await d.runtime.removeContainer({ containerId: missing });
  const noImage = await grpcCode(
    d.runtime.createContainer({ podSandboxId, config: ctr('x', { image: { image: 'example.invalid/none:1' } }), sandboxConfig: podCfg }),
  );
  assert.equal(noImage.code, Status.NOT_FOUND);
  assert.match(noImage.details, /example\.invalid\/none:1/);
  const noPod = await grpcCode(d.runtime.createContainer({ podSandboxId: missing, config: ctr('x'), sandboxConfig: podCfg }));
  assert.equal(noPod.code, Status.NOT_FOUND);
  const badCap = await grpcCode(
    d.runtime.createContainer({
      podSandboxId,
      config: ctr('x', { linux: { securityContext: { capabilities: { addCapabilities: ['CAP_NOPE'] } } } }),
      sandboxConfig: podCfg,
    }),
  );
  assert.equal(badCap.code, Status.INVALID_ARGUMENT);
  assert.match(badCap.details, /add_capabilities/);
  const noMeta = await grpcCode(d.runtime.createContainer({ podSandboxId, config: { image: { image: ref } }, sandboxConfig: podCfg }));
  assert.equal(noMeta.code, Status.INVALID_ARGUMENT);
  assert.match(noMeta.details, /metadata/);

  // RemoveContainer, then the pod takes the rest along.
  await d.runtime.removeContainer({ containerId: bad });
  assert.equal((await grpcCode(d.runtime.containerStatus({ containerId: bad }))).code, Status.NOT_FOUND);
  await d.runtime.stopPodSandbox({ podSandboxId });
  await d.runtime.removePodSandbox({ podSandboxId });
  assert.deepEqual((await d.runtime.listContainers({})).containers, []);
  for (const id of [dflt, ok, svc, ends]) assert.equal(existsSync(join(first.root, 'containers', id)), false);
});
