// Recursive read-only mounts (Mount.recursive_read_only) through the CRI of a real skiffd: a bind
// mount with a tmpfs mounted below it is read-only all the way down with rro, and only at its top
// without. The CRI's refusals (rro needs readonly and private propagation), and the per-handler
// advertisement in Status, decided from the OCI runtime's own `features` output: runc 1.1 lists "rro",
// crun 1.8 has no `features` command, so a daemon on crun advertises nothing and refuses rro mounts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Status } from 'nice-grpc';
import { ContainerState, MountPropagation, NamespaceMode, type DeepPartial, type Mount } from '../../proto/gen/runtime/v1/api.ts';
import { kernelAtLeast, recursiveReadOnlySupport } from '../../node/skiffd/oci/features.ts';
import { needs, unavailable } from '../support/prereq.ts';
import { startSkiffd, type SkiffdHandle } from '../support/skiffd.ts';
import { buildImage, buildTar, busyboxBaseEntries, Pusher } from '../support/image-builder.ts';
import { skiffdNetworkConfig } from '../support/netns.ts';
import { grpcCode, podConfig } from '../support/pods.ts';
import { until } from '../support/wait.ts';
import { startPodWorld } from '../support/pod-world.ts';
import { runCommand } from '../support/commands.ts';

const PREREQS = { root: true, commands: ['runc', 'conmon', 'unshare', 'catatonit', 'mount', 'umount', '/usr/lib/cni/bridge', '/usr/bin/docker-registry'] };

test('the rro decision: the runtime must list "rro" and the kernel must have mount_setattr (5.12)', () => {
  assert.equal(kernelAtLeast('5.12.0', [5, 12]), true);
  assert.equal(kernelAtLeast('6.1.0-18-amd64', [5, 12]), true);
  assert.equal(kernelAtLeast('5.10.209-fc', [5, 12]), false);
  assert.equal(kernelAtLeast('4.19.0', [5, 12]), false);
  assert.equal(kernelAtLeast('garbage', [5, 12]), false);
  assert.deepEqual(recursiveReadOnlySupport({ mountOptions: ['ro', 'rro'] }, '6.1.0'), { supported: true });
  assert.match(recursiveReadOnlySupport({ mountOptions: ['ro', 'rro'] }, '5.10.0').reason!, /kernel 5\.10\.0 is older than 5\.12/);
  assert.match(recursiveReadOnlySupport({ mountOptions: ['ro'] }, '6.1.0').reason!, /does not list the "rro" mount option/);
  assert.match(recursiveReadOnlySupport({ mountOptions: [], unknown: '`crun features` failed: unknown command' }, '6.1.0').reason!, /crun features/);
});

/** A busybox image with touch and grep. */
async function pushImage(registry: { url: string; host: string }): Promise<string> {
  const image = buildImage({
    format: 'oci',
    layers: [
      await buildTar([
        ...busyboxBaseEntries(),
        { name: 'bin/touch', type: 'symlink', linkname: 'busybox' },
        { name: 'bin/grep', type: 'symlink', linkname: 'busybox' },
        { name: 'mnt/', type: 'directory' },
      ]),
    ],
    env: ['PATH=/bin'],
  });
  const pusher = new Pusher(registry.url);
  for (const b of [image.config, ...image.layers]) await pusher.blob('skiff/rro', b);
  await pusher.manifest('skiff/rro', '1', image.manifest);
  return `${registry.host}/skiff/rro:1`;
}

/** The mountOptions `runc features` prints here, read by the test itself. */
async function runcMountOptions(): Promise<string[]> {
  const r = await runCommand('runc', ['features'], { timeoutMs: 10_000 });
  assert.equal(r.code, 0, r.stderr);
  return (JSON.parse(r.stdout) as { mountOptions: string[] }).mountOptions;
}

test('recursive read-only mounts: made with rro, refused as the CRI requires, advertised from the runtime', { timeout: 180_000 }, async (t) => {
  if (!needs(t, PREREQS)) return;
  const { dir, net, registry, cleanups } = await startPodWorld(t, 'skiff-rro-');
  const ref = await pushImage(registry);

  // The volume: a directory with a tmpfs mounted on its "sub" directory.
  const volume = mkdtempSync(join(tmpdir(), 'skiff-rro-vol-'));
  mkdirSync(join(volume, 'sub'));
  const mounted = await runCommand('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'skiff-rro', join(volume, 'sub')], { timeoutMs: 10_000 });
  assert.equal(mounted.code, 0, mounted.stderr);
  cleanups.push(async () => {
    await runCommand('umount', ['-l', join(volume, 'sub')], { timeoutMs: 10_000 });
    rmSync(volume, { recursive: true, force: true });
  });

  const config = `${skiffdNetworkConfig(net)}\n[registry.configs."${registry.host}"]\ninsecure = true\n`;
  const d = await startSkiffd({ config });
  cleanups.push(() => d.cleanup());
  cleanups.push(async () => {
    for (const p of (await d.runtime.listPodSandbox({})).items) await d.runtime.removePodSandbox({ podSandboxId: p.id });
  });

  const hasRro = (await runcMountOptions()).includes('rro') && kernelAtLeast(release(), [5, 12]);
  await t.test('Status: the default handler advertises rro as `runc features` and the kernel allow', async () => {
    const s = await d.runtime.status({});
    assert.deepEqual(
      s.runtimeHandlers.map((h) => ({ name: h.name, rro: h.features?.recursiveReadOnlyMounts })),
      [
        { name: '', rro: hasRro },
        { name: 'runc', rro: hasRro },
      ],
    );
  });
  if (!hasRro) return unavailable(t, `runc here does not list "rro" in \`runc features\`, or kernel ${release()} is older than 5.12`);

  await d.images.pullImage({ image: { image: ref } });
  const podCfg = podConfig('rro', { network: NamespaceMode.NODE });
  const { podSandboxId } = await d.runtime.runPodSandbox({ config: podCfg });
  const create = (name: string, mount: DeepPartial<Mount>) =>
    d.runtime.createContainer({
      podSandboxId,
      sandboxConfig: podCfg,
      config: { metadata: { name }, image: { image: ref }, command: ['sleep', '3600'], mounts: [{ hostPath: volume, containerPath: '/mnt', ...mount }] },
    });
  const touch = async (name: string, mount: DeepPartial<Mount>) => {
    const { containerId } = await create(name, mount);
    await d.runtime.startContainer({ containerId });
    await until(`${name} to run`, async () => (await d.runtime.containerStatus({ containerId })).status?.state === ContainerState.CONTAINER_RUNNING);
    const results: Record<string, string> = {};
    for (const path of ['/mnt/top', '/mnt/sub/below']) {
      const r = await d.runtime.execSync({ containerId, cmd: ['touch', path], timeout: 10n });
      results[path] = r.exitCode === 0 ? 'written' : r.stderr.toString().trim();
    }
    return results;
  };

  await t.test('readonly without rro: the mount below stays writable (what rro exists to close)', async () => {
    assert.deepEqual(await touch('ro', { readonly: true }), {
      '/mnt/top': 'touch: /mnt/top: Read-only file system',
      '/mnt/sub/below': 'written',
    });
  });

  await t.test('readonly with rro: read-only all the way down', async () => {
    assert.deepEqual(await touch('rro', { readonly: true, recursiveReadOnly: true }), {
      '/mnt/top': 'touch: /mnt/top: Read-only file system',
      '/mnt/sub/below': 'touch: /mnt/sub/below: Read-only file system',
    });
  });

  await t.test('rro without readonly, or with host-to-container or bidirectional propagation, is INVALID_ARGUMENT', async () => {
    const cases: [string, DeepPartial<Mount>][] = [
      ['rro-rw', { readonly: false, recursiveReadOnly: true }],
      ['rro-slave', { readonly: true, recursiveReadOnly: true, propagation: MountPropagation.PROPAGATION_HOST_TO_CONTAINER }],
      ['rro-shared', { readonly: true, recursiveReadOnly: true, propagation: MountPropagation.PROPAGATION_BIDIRECTIONAL }],
    ];
    for (const [name, mount] of cases) {
      const err = await grpcCode(create(name, mount));
      assert.equal(err.code, Status.INVALID_ARGUMENT, `${name}: ${err.details}`);
      assert.match(err.details, /config\.mounts\[0\]\.recursive_read_only: needs readonly and private propagation/, name);
    }
  });

  await t.test('on crun 1.8, which has no `features` command, nothing is advertised and an rro mount is refused', async (t) => {
    if (!needs(t, { commands: ['crun'] })) return;
    const c: SkiffdHandle = await startSkiffd({ dir: mkdtempSync(join(dir, 'crun-')), config: `${config}\n[runtime]\nruntime_path = "crun"\n` });
    cleanups.push(() => c.cleanup());
    const s = await c.runtime.status({});
    assert.equal(s.runtimeHandlers[0]?.features?.recursiveReadOnlyMounts, false);
    await c.images.pullImage({ image: { image: ref } });
    const pod = podConfig('rro-crun', { network: NamespaceMode.NODE });
    const { podSandboxId: crunPod } = await c.runtime.runPodSandbox({ config: pod });
    const err = await grpcCode(
      c.runtime.createContainer({
        podSandboxId: crunPod,
        sandboxConfig: pod,
        config: {
          metadata: { name: 'rro' },
          image: { image: ref },
          command: ['true'],
          mounts: [{ hostPath: volume, containerPath: '/mnt', readonly: true, recursiveReadOnly: true }],
        },
      }),
    );
    assert.equal(err.code, Status.INVALID_ARGUMENT, err.details);
    assert.match(err.details, /recursive_read_only: not supported by the OCI runtime \S*crun: `\S*crun features` failed/);
    await c.runtime.removePodSandbox({ podSandboxId: crunPod });
  });
});
