// Image volumes across the daemon's life: a container's image volume survives kill -9 of skiffd and
// its restart, RemoveImage of the volume's image leaves the running container's view intact (its layers
// are leased, as a container's own image's are), and once the container and pod are gone nothing is
// left: no mount, and the removed image's layers are collected.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContainerState, NamespaceMode } from '../../proto/gen/runtime/v1/api.ts';
import { kitMissing, startKitRegistry } from '../support/cri-conformance.ts';
import { mountsUnder, removeTree } from '../support/kubelet-host.ts';
import { freePort } from '../support/netns.ts';
import { grpcCode, podConfig } from '../support/pods.ts';
import { Status } from 'nice-grpc';
import { needs, unavailable } from '../support/prereq.ts';
import { startSkiffd, type SkiffdHandle, removeDaemonDir } from '../support/skiffd.ts';
import { until } from '../support/wait.ts';

const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';
const VOLUME_IMAGE = 'registry.k8s.io/e2e-test-images/nginx:1.14-2';

test('image volumes: kill -9 of skiffd, RemoveImage while mounted, and nothing left after removal', { timeout: 180_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon', 'docker-registry'] })) return;
  const missing = kitMissing('1.36');
  if (missing) return unavailable(t, missing);
  const registry = await startKitRegistry(await freePort());
  t.after(() => registry.stop());
  const dir = mkdtempSync(join(tmpdir(), 'skiff-imgvol-d-'));
  t.after(() => removeDaemonDir(dir));
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

/** Every file and directory under `dir` with its type, size and mode: what a delete through a mount would change. */
function treeSnapshot(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string, rel: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, e.name);
      const st = lstatSync(path);
      out.push(`${rel}${e.name} ${e.isDirectory() ? 'd' : e.isSymbolicLink() ? 'l' : 'f'} ${e.isFile() ? st.size : ''} ${st.mode.toString(8)}`);
      if (e.isDirectory()) walk(path, `${rel}${e.name}/`);
    }
  };
  walk(dir, '');
  return out.sort();
}

// A daemon killed inside CreateContainer after mounting image volumes and before writing the record
// leaves a container directory with live mounts and nothing on disk that lists them. Each case kills it
// at a named point (SKIFFD_CRASH_AT): a one-layer image bound and not yet read-only (a delete through it
// would empty the image's shared layer), and a two-layer image mounted read-only (a delete through it
// fails on EROFS and so would the restart).
for (const c of [
  { point: 'image-volume-bound', image: BUSYBOX, layers: 'one layer, bound and still writable' },
  { point: 'create-container-mounted', image: VOLUME_IMAGE, layers: 'two layers, read-only overlay' },
]) {
  test(`a crash in CreateContainer at ${c.point} (${c.layers}): the restart unmounts before it deletes, and the layers stay`, {
    timeout: 180_000,
  }, async (t) => {
    if (!needs(t, { root: true, commands: ['runc', 'conmon', 'docker-registry'] })) return;
    const missing = kitMissing('1.36');
    if (missing) return unavailable(t, missing);
    const registry = await startKitRegistry(await freePort());
    t.after(() => registry.stop());
    const dir = mkdtempSync(join(tmpdir(), 'skiff-imgvol-crash-'));
    let d: SkiffdHandle | undefined;
    // The daemon first, then its files, mounts taken off: a failed run must not leave either behind.
    t.after(async () => {
      await d?.cleanup();
      await removeTree(dir);
    });
    d = await startSkiffd({ dir, config: registry.mirrorsToml, env: { SKIFFD_CRASH_AT: c.point } });
    for (const image of [BUSYBOX, VOLUME_IMAGE]) await d.images.pullImage({ image: { image } });
    const layers = join(d.root, 'images', 'layers');
    const before = treeSnapshot(layers);
    const sandboxConfig = podConfig('crash', { network: NamespaceMode.NODE });
    const { podSandboxId } = await d.runtime.runPodSandbox({ config: sandboxConfig });
    const config = {
      metadata: { name: 'reader' },
      image: { image: BUSYBOX },
      command: ['sleep', '3600'],
      mounts: [{ containerPath: '/vol', image: { image: c.image }, readonly: true }],
    };
    const err = await grpcCode(d.runtime.createContainer({ podSandboxId, sandboxConfig, config }));
    assert.equal(err.code, Status.UNAVAILABLE, `the daemon died in the call: ${err.details}`);
    assert.equal((await d.exited).signal, 'SIGKILL');
    const containers = join(d.root, 'containers');
    const left = mountsUnder(containers);
    assert.ok(
      left.some((m) => m.includes('/image-volumes/')),
      `the crash left the image volume mounted: ${JSON.stringify(left)}`,
    );

    d.channel.close();
    d = await startSkiffd({ dir, config: registry.mirrorsToml });
    const live = d;
    assert.deepEqual(mountsUnder(containers), [], 'recovery took every mount off');
    assert.deepEqual(
      readdirSync(containers).filter((n) => /^[0-9a-f]{64}$/.test(n)),
      [],
      'the half-created container is gone',
    );
    assert.deepEqual(treeSnapshot(layers), before, "the image layers are as they were: nothing was deleted through the volume's mount");
    // The same create now works, and reads the image through the volume.
    const { containerId } = await live.runtime.createContainer({ podSandboxId, sandboxConfig, config });
    await live.runtime.startContainer({ containerId });
    const ls = await live.runtime.execSync({ containerId, cmd: ['ls', '/vol'], timeout: 10n });
    assert.ok(ls.stdout.toString().trim().length > 0, `the volume lists the image: ${ls.stderr}`);
    await live.runtime.stopPodSandbox({ podSandboxId });
    await live.runtime.removePodSandbox({ podSandboxId });
    assert.deepEqual(mountsUnder(containers), []);
  });
}

test('a root reached through a symlink: image sub-paths work, and a restart neither stacks nor leaves mounts', { timeout: 180_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon', 'docker-registry'] })) return;
  const missing = kitMissing('1.36');
  if (missing) return unavailable(t, missing);
  const registry = await startKitRegistry(await freePort());
  t.after(() => registry.stop());
  const dir = mkdtempSync(join(tmpdir(), 'skiff-imgvol-link-'));
  let d: SkiffdHandle | undefined;
  t.after(async () => {
    await d?.cleanup();
    await removeTree(dir);
  });
  // /var/lib on another disk, reached through a link: the root and the state both go through one.
  mkdirSync(join(dir, 'disk', 'root'), { recursive: true });
  mkdirSync(join(dir, 'disk', 'state'), { recursive: true });
  symlinkSync(join(dir, 'disk'), join(dir, 'link'));
  const args = ['--root', join(dir, 'link', 'root'), '--state', join(dir, 'link', 'state')];
  const first = await startSkiffd({ dir, config: registry.mirrorsToml, args });
  d = first;
  await first.images.pullImage({ image: { image: BUSYBOX } });
  const sandboxConfig = podConfig('link', { network: NamespaceMode.NODE });
  const { podSandboxId } = await d.runtime.runPodSandbox({ config: sandboxConfig });
  const { containerId } = await d.runtime.createContainer({
    podSandboxId,
    sandboxConfig,
    config: {
      metadata: { name: 'reader' },
      image: { image: BUSYBOX },
      command: ['sleep', '3600'],
      mounts: [{ containerPath: '/image-etc', image: { image: BUSYBOX }, imageSubPath: 'etc', readonly: true }],
    },
  });
  await d.runtime.startContainer({ containerId });
  const passwd = async (on: SkiffdHandle) => (await on.runtime.execSync({ containerId, cmd: ['cat', '/image-etc/passwd'], timeout: 10n })).stdout.toString();
  assert.match(await passwd(d), /^root:/m, "the sub-path is the image's /etc");
  const real = join(dir, 'disk', 'root', 'containers', containerId);
  const mounted = mountsUnder(real).sort();
  assert.equal(mounted.length, 2, `the rootfs and the volume: ${JSON.stringify(mounted)}`);

  d.channel.close();
  d.child.kill('SIGKILL');
  await d.exited;
  d = await startSkiffd({ dir, config: registry.mirrorsToml, args });
  assert.equal((await d.runtime.containerStatus({ containerId })).status?.state, ContainerState.CONTAINER_RUNNING);
  assert.deepEqual(mountsUnder(real).sort(), mounted, 'the restart found its mounts and stacked none');
  assert.match(await passwd(d), /^root:/m);
  await d.runtime.stopPodSandbox({ podSandboxId });
  await d.runtime.removePodSandbox({ podSandboxId });
  assert.deepEqual(mountsUnder(join(dir, 'disk')), [], 'no mount left');
});
