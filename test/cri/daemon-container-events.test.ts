// GetContainerEvents as the kubelet's Evented PLEG reads it: every event of a container or of a pod
// sandbox (whose events carry the sandbox's id) comes with what the kubelet rebuilds the pod's cached
// status from, the sandbox's status with its IP and the status of every container of the pod, as they
// were when it happened. Here against a real skiffd on a private CNI network; kubelet-evented-pleg runs
// the kubelet itself on these events.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ContainerEventResponse, ContainerEventType, ContainerState, PodSandboxState } from '../../proto/gen/runtime/v1/api.ts';
import { kitMissing, startKitRegistry } from '../support/cri-conformance.ts';
import { createTestNetwork, freePort, skiffdNetworkConfig } from '../support/netns.ts';
import { podConfig } from '../support/pods.ts';
import { needs, unavailable } from '../support/prereq.ts';
import { startSkiffd } from '../support/skiffd.ts';
import { until } from '../support/wait.ts';

const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';
const {
  CONTAINER_CREATED_EVENT: CREATED,
  CONTAINER_STARTED_EVENT: STARTED,
  CONTAINER_STOPPED_EVENT: STOPPED,
  CONTAINER_DELETED_EVENT: DELETED,
} = ContainerEventType;

test('container events carry the pod sandbox status (IP included) and every container of the pod, for sandbox and container events alike', {
  timeout: 180_000,
}, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon', 'docker-registry', 'unshare', 'nsenter', '/usr/lib/cni/bridge'] })) return;
  const missing = kitMissing('1.36');
  if (missing) return unavailable(t, missing);
  const registry = await startKitRegistry(await freePort());
  t.after(() => registry.stop());
  const dir = mkdtempSync(join(tmpdir(), 'skiff-events-'));
  const net = createTestNetwork(dir);
  const d = await startSkiffd({ config: `${skiffdNetworkConfig(net)}\n${registry.mirrorsToml}\n` });
  t.after(async () => {
    await d.cleanup();
    await net.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });
  await d.images.pullImage({ image: { image: BUSYBOX } });

  const events: ContainerEventResponse[] = [];
  const abort = new AbortController();
  const reading = (async () => {
    try {
      for await (const e of d.runtime.getContainerEvents({}, { signal: abort.signal })) events.push(e);
    } catch {
      /* aborted */
    }
  })();
  t.after(async () => {
    abort.abort();
    await reading;
  });
  // The stream is open once a call on the same channel has come back after it: nothing before is lost.
  await d.runtime.version({});
  const event = (what: string, match: (e: ContainerEventResponse) => boolean) => until(what, () => events.find(match));

  const sandboxConfig = podConfig('events');
  const { podSandboxId } = await d.runtime.runPodSandbox({ config: sandboxConfig });
  const { status: sandbox } = await d.runtime.podSandboxStatus({ podSandboxId });
  const ip = sandbox?.network?.ip ?? '';
  assert.match(ip, /^\d+\.\d+\.\d+\.\d+$/, 'the pod has an IP on the network');
  for (const type of [CREATED, STARTED]) {
    const e = await event(`the sandbox's ${ContainerEventType[type]}`, (e) => e.containerId === podSandboxId && e.containerEventType === type);
    assert.equal(e.podSandboxStatus?.id, podSandboxId);
    assert.equal(e.podSandboxStatus?.metadata?.uid, sandboxConfig.metadata?.uid, 'the metadata the kubelet keys the pod by');
    assert.equal(e.podSandboxStatus?.state, PodSandboxState.SANDBOX_READY);
    assert.equal(e.podSandboxStatus?.network?.ip, ip);
    assert.deepEqual(e.containersStatuses, []);
  }

  const create = async (name: string, script: string) =>
    (
      await d.runtime.createContainer({
        podSandboxId,
        sandboxConfig,
        config: { metadata: { name }, image: { image: BUSYBOX }, command: ['sh', '-c', script] },
      })
    ).containerId;
  const stays = await create('stays', 'exec sleep 3600');
  await d.runtime.startContainer({ containerId: stays });
  const ends = await create('ends', 'while [ ! -e /tmp/go ]; do sleep 0.05; done; exit 3');
  await d.runtime.startContainer({ containerId: ends });
  const started = await event('the start of the second container', (e) => e.containerId === ends && e.containerEventType === STARTED);
  const byId = (e: ContainerEventResponse) => new Map(e.containersStatuses.map((s) => [s.id, s]));
  assert.equal(started.podSandboxStatus?.network?.ip, ip, "a container's event carries its pod's IP");
  assert.deepEqual(
    [...byId(started).entries()].map(([id, s]) => [id, s.metadata?.name, s.state]),
    [
      [stays, 'stays', ContainerState.CONTAINER_RUNNING],
      [ends, 'ends', ContainerState.CONTAINER_RUNNING],
    ],
    'every container of the pod',
  );

  await d.runtime.execSync({ containerId: ends, cmd: ['touch', '/tmp/go'], timeout: 10n });
  const stopped = await event('the exit of the second container', (e) => e.containerId === ends && e.containerEventType === STOPPED);
  const after = byId(stopped);
  assert.deepEqual([after.get(ends)?.state, after.get(ends)?.exitCode, after.get(ends)?.reason], [ContainerState.CONTAINER_EXITED, 3, 'Error']);
  assert.equal(after.get(stays)?.state, ContainerState.CONTAINER_RUNNING);

  await d.runtime.removeContainer({ containerId: ends });
  const deleted = await event('the removal of the second container', (e) => e.containerId === ends && e.containerEventType === DELETED);
  assert.deepEqual([...byId(deleted).keys()], [stays], 'a removed container is no longer among its pod');

  await d.runtime.stopPodSandbox({ podSandboxId });
  const podStopped = await event("the sandbox's stop", (e) => e.containerId === podSandboxId && e.containerEventType === STOPPED);
  assert.equal(podStopped.podSandboxStatus?.state, PodSandboxState.SANDBOX_NOTREADY);
  await d.runtime.removePodSandbox({ podSandboxId });
  // The kubelet forgets a pod on its sandbox's DELETED event, recognised by the sandbox status it carries.
  const podDeleted = await event("the sandbox's removal", (e) => e.containerId === podSandboxId && e.containerEventType === DELETED);
  assert.equal(podDeleted.podSandboxStatus?.id, podSandboxId);
  assert.equal(podDeleted.podSandboxStatus?.metadata?.uid, sandboxConfig.metadata?.uid);
  assert.deepEqual(podDeleted.containersStatuses, []);
  // In the order they happened, each created before it started.
  const sandboxTypes = events.filter((e) => e.containerId === podSandboxId).map((e) => e.containerEventType);
  assert.deepEqual(sandboxTypes, [CREATED, STARTED, STOPPED, DELETED]);
});
