// SupplementalGroupsPolicy through the CRI of a real skiffd: with Merge (the default) the groups the
// image's /etc/group gives the container's user are added to the requested ones, with Strict they are
// not. The effective groups are read from the host's /proc/PID/status of the container's first process
// and from an exec'd `id -G`, and ContainerStatus.user must report the same identity. Status advertises
// the feature, which is what the kubelet and critest look at before using it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Status } from 'nice-grpc';
import { ContainerState, NamespaceMode, SupplementalGroupsPolicy, type ContainerConfig, type DeepPartial } from '../../proto/gen/runtime/v1/api.ts';
import { needs } from '../support/prereq.ts';
import { startSkiffd } from '../support/skiffd.ts';
import { buildImage, buildTar, busyboxBaseEntries, Pusher } from '../support/image-builder.ts';
import { skiffdNetworkConfig } from '../support/netns.ts';
import { grpcCode, podConfig } from '../support/pods.ts';
import { until } from '../support/wait.ts';
import { startPodWorld } from '../support/pod-world.ts';

const PREREQS = { root: true, commands: ['runc', 'conmon', 'unshare', 'catatonit', '/usr/lib/cni/bridge', '/usr/bin/docker-registry'] };

/** The image's user "app" (1000:1000) is a member of "staff" (50000) in its /etc/group. */
const APP_UID = 1000;
const IMAGE_GROUP = 50000;
const REQUESTED = 1234;

test('SupplementalGroupsPolicy: Merge adds the image groups, Strict does not; ContainerStatus.user is the effective identity', {
  timeout: 180_000,
}, async (t) => {
  if (!needs(t, PREREQS)) return;
  const { net, registry, cleanups } = await startPodWorld(t, 'skiff-groups-');

  const image = buildImage({
    format: 'oci',
    layers: [
      await buildTar(busyboxBaseEntries()),
      await buildTar([
        { name: 'etc/', type: 'directory' },
        { name: 'etc/group', content: `root:x:0:\napp:x:1000:\nstaff:x:${IMAGE_GROUP}:app\nother:x:60000:root\n` },
      ]),
    ],
    env: ['PATH=/bin'],
    user: 'app',
  });
  const pusher = new Pusher(registry.url);
  for (const b of [image.config, ...image.layers]) await pusher.blob('skiff/groups', b);
  await pusher.manifest('skiff/groups', '1', image.manifest);
  const ref = `${registry.host}/skiff/groups:1`;

  const d = await startSkiffd({ config: `${skiffdNetworkConfig(net)}\n[registry.configs."${registry.host}"]\ninsecure = true\n` });
  cleanups.push(() => d.cleanup());
  cleanups.push(async () => {
    for (const p of (await d.runtime.listPodSandbox({})).items) await d.runtime.removePodSandbox({ podSandboxId: p.id });
  });

  await t.test('Status advertises SupplementalGroupsPolicy', async () => {
    const s = await d.runtime.status({});
    assert.equal(s.features?.supplementalGroupsPolicy, true);
  });

  await d.images.pullImage({ image: { image: ref } });
  const podCfg = podConfig('groups', { network: NamespaceMode.NODE });
  const { podSandboxId } = await d.runtime.runPodSandbox({ config: podCfg });

  const run = async (name: string, securityContext: DeepPartial<NonNullable<ContainerConfig['linux']>['securityContext']>) => {
    const { containerId } = await d.runtime.createContainer({
      podSandboxId,
      sandboxConfig: podCfg,
      config: { metadata: { name }, image: { image: ref }, command: ['sleep', '3600'], linux: { securityContext } },
    });
    await d.runtime.startContainer({ containerId });
    await until(`${name} to run`, async () => (await d.runtime.containerStatus({ containerId })).status?.state === ContainerState.CONTAINER_RUNNING);
    const verbose = await d.runtime.containerStatus({ containerId, verbose: true });
    const pid = (JSON.parse(verbose.info.info) as { pid: number }).pid;
    const proc = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (key: string) =>
      proc
        .match(new RegExp(`^${key}:\\s*(.*)$`, 'm'))![1]
        .trim()
        .split(/\s+/)
        .map(Number);
    const exec = await d.runtime.execSync({ containerId, cmd: ['id', '-G'], timeout: 10n });
    assert.equal(exec.exitCode, 0, exec.stderr.toString());
    const user = verbose.status!.user?.linux;
    return {
      first: { uid: field('Uid')[0], gid: field('Gid')[0], groups: field('Groups').sort((a, b) => a - b) },
      exec: exec.stdout
        .toString()
        .trim()
        .split(/\s+/)
        .map(Number)
        .sort((a, b) => a - b),
      status: user && { uid: Number(user.uid), gid: Number(user.gid), groups: user.supplementalGroups.map(Number).sort((a, b) => a - b) },
    };
  };

  await t.test('Merge (the default): the requested group and the image group of the user', async () => {
    const got = await run('merge', { runAsUser: { value: BigInt(APP_UID) }, supplementalGroups: [BigInt(REQUESTED)] });
    const want = { uid: APP_UID, gid: APP_UID, groups: [APP_UID, REQUESTED, IMAGE_GROUP] };
    assert.deepEqual(got.first, want, 'the first process');
    assert.deepEqual(got.exec, want.groups, 'an exec');
    assert.deepEqual(got.status, want, 'ContainerStatus.user');
  });

  await t.test("Strict: only the requested groups, not the image's", async () => {
    const got = await run('strict', {
      runAsUser: { value: BigInt(APP_UID) },
      supplementalGroups: [BigInt(REQUESTED)],
      supplementalGroupsPolicy: SupplementalGroupsPolicy.Strict,
    });
    const want = { uid: APP_UID, gid: APP_UID, groups: [APP_UID, REQUESTED] };
    assert.deepEqual(got.first, want, 'the first process');
    assert.deepEqual(got.exec, want.groups, 'an exec');
    assert.deepEqual(got.status, want, 'ContainerStatus.user');
  });

  await t.test("Strict with the image's own user and run_as_group: the primary group is the one asked for", async () => {
    const got = await run('strict-group', {
      runAsUser: { value: BigInt(APP_UID) },
      runAsGroup: { value: 2000n },
      supplementalGroupsPolicy: SupplementalGroupsPolicy.Strict,
    });
    const want = { uid: APP_UID, gid: 2000, groups: [2000] };
    assert.deepEqual(got.first, want, 'the first process');
    assert.deepEqual(got.status, want, 'ContainerStatus.user');
  });

  await t.test('an unknown policy is refused with INVALID_ARGUMENT naming the field', async () => {
    const err = await grpcCode(
      d.runtime.createContainer({
        podSandboxId,
        sandboxConfig: podCfg,
        config: {
          metadata: { name: 'bad-policy' },
          image: { image: ref },
          command: ['true'],
          linux: { securityContext: { supplementalGroupsPolicy: 7 as SupplementalGroupsPolicy } },
        },
      }),
    );
    assert.equal(err.code, Status.INVALID_ARGUMENT);
    assert.match(err.details, /supplemental_groups_policy: unknown policy 7/);
  });
});
