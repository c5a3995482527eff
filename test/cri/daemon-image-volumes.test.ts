// Image volumes across the daemon's life: a container's image volume survives kill -9 of skiffd and
// its restart, RemoveImage of the volume's image leaves the running container's view intact (its layers
// are leased, as a container's own image's are), and once the container and pod are gone nothing is
// left: no mount, and the removed image's layers are collected.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContainerState, NamespaceMode } from '../../proto/gen/runtime/v1/api.ts';
import { kitMissing, startKitRegistry } from '../support/cri-conformance.ts';
import { mountsUnder } from '../support/kubelet-host.ts';
import { freePort } from '../support/netns.ts';
import { grpcCode, podConfig } from '../support/pods.ts';
import { Status } from 'nice-grpc';
import { needs, unavailable } from '../support/prereq.ts';
import { startSkiffd } from '../support/skiffd.ts';
import { until } from '../support/wait.ts';

const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';
const VOLUME_IMAGE = 'registry.k8s.io/e2e-test-images/nginx:1.14-2';

test('image volumes: kill -9 of skiffd, RemoveImage while mounted, and nothing left after removal', { timeout: 180_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon', 'docker-registry'] })) return;
  const missing = kitMissing('1.32');
  if (missing) return unavailable(t, missing);
  const registry = await startKitRegistry(await freePort());
  t.after(() => registry.stop());
  const dir = mkdtempSync(join(tmpdir(), 'skiff-imgvol-d-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  let d = await startSkiffd({ dir, config: registry.mirrorsToml });
  t.after(() => d.cleanup());
  for (const image of [BUSYBOX, VOLUME_IMAGE]) await d.images.pullImage({ image: { image } });
  const layersBefore = readdirSync(join(d.root, 'images', 'layers')).length;

  const sandboxConfig = podConfig('imgvol', { network: NamespaceMode.NODE });
  const { podSandboxId } = await d.runtime.runPodSandbox({ config: sandboxConfig });
  const { containerId } = await d.runtime.createContainer({
    podSandboxId,
    sandboxConfig,
    config: {
      metadata: { name: 'reader' },
      image: { image: BUSYBOX },
      command: ['sleep', '3600'],
      mounts: [
        { containerPath: '/tools', image: { image: VOLUME_IMAGE }, readonly: true },
        // Kubernetes 1.33's sub-path: one directory of the image.
        { containerPath: '/image-etc', image: { image: BUSYBOX }, imageSubPath: 'etc', readonly: true },
      ],
    },
  });
  await d.runtime.startContainer({ containerId });
  const listing = async () => (await d.runtime.execSync({ containerId, cmd: ['ls', '/tools'], timeout: 10n })).stdout.toString();
  const before = await listing();
  assert.ok(before.trim().length > 0, 'the image is there');
  const passwd = (await d.runtime.execSync({ containerId, cmd: ['cat', '/image-etc/passwd'], timeout: 10n })).stdout.toString();
  assert.match(passwd, /^root:/m, "the sub-path is the image's /etc");
  const volumeMounts = join(d.root, 'containers', containerId, 'image-volumes');
  assert.equal(mountsUnder(volumeMounts).length, 2);

  // kill -9: the container and its volume stay; the restarted daemon knows both.
  d.channel.close();
  d.child.kill('SIGKILL');
  await d.exited;
  d = await startSkiffd({ dir, config: registry.mirrorsToml });
  assert.equal((await d.runtime.containerStatus({ containerId })).status?.state, ContainerState.CONTAINER_RUNNING);
  assert.equal(await listing(), before, 'the volume is the same after the restart');
  assert.equal(mountsUnder(volumeMounts).length, 2);

  // Refusals reach the client with their codes, through the gRPC layer.
  const refused = async (mount: Record<string, unknown>, code: Status, message: RegExp) => {
    const err = await grpcCode(
      d.runtime.createContainer({ podSandboxId, sandboxConfig, config: { metadata: { name: `bad-${code}` }, image: { image: BUSYBOX }, mounts: [mount] } }),
    );
    assert.equal(err.code, code, err.details);
    assert.match(err.details, message);
  };
  await refused(
    { containerPath: '/x', image: { image: 'registry.k8s.io/no/such:1' }, readonly: true },
    Status.NOT_FOUND,
    /the image registry\.k8s\.io\/no\/such:1 is not present/,
  );
  await refused(
    { containerPath: '/x', image: { image: BUSYBOX }, imageSubPath: 'no/such', readonly: true },
    Status.FAILED_PRECONDITION,
    /"no\/such" does not exist in the image/,
  );

  // RemoveImage: the image goes from the list, its layers stay while the container mounts them.
  await d.images.removeImage({ image: { image: VOLUME_IMAGE } });
  assert.equal((await d.images.imageStatus({ image: { image: VOLUME_IMAGE } })).image, undefined);
  assert.equal(await listing(), before, 'the running container still reads the removed image');

  await d.runtime.stopPodSandbox({ podSandboxId });
  await d.runtime.removePodSandbox({ podSandboxId });
  assert.deepEqual(mountsUnder(join(d.root, 'containers')), [], 'no mount left');
  // The removed image's layers are collected once nothing leases them (at the next collection).
  await d.images.pullImage({ image: { image: VOLUME_IMAGE } });
  await d.images.removeImage({ image: { image: VOLUME_IMAGE } });
  await until('the volume image layers to be collected', () => readdirSync(join(d.root, 'images', 'layers')).length < layersBefore, 30_000);
});
