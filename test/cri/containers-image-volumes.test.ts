// Image volumes: a mount whose source is an image is the image's layers, mounted read-only (an overlay
// with no upper directory: nothing copied), or one path in it; every bad request is refused with a code
// and a message that names the field and the image; removal leaves no mount behind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Status } from 'nice-grpc-common';
import { ContainerConfig, ContainerState } from '../../proto/gen/runtime/v1/api.ts';
import { needs } from '../support/prereq.ts';
import { startRuncContainers } from '../support/runc-containers.ts';
import { until } from '../support/wait.ts';

/** Two layers: the lower one has /data/a.txt, the upper /data/b.txt and links in and out of the image. */
function imageLayers(): { layers: string[]; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-imgvol-'));
  const lower = join(dir, 'l0');
  const upper = join(dir, 'l1');
  mkdirSync(join(lower, 'data'), { recursive: true });
  writeFileSync(join(lower, 'data', 'a.txt'), 'from the lower layer\n');
  mkdirSync(join(upper, 'data'), { recursive: true });
  writeFileSync(join(upper, 'data', 'b.txt'), 'from the upper layer\n');
  symlinkSync('data', join(upper, 'inside'));
  symlinkSync('/etc', join(upper, 'outside'));
  symlinkSync('../../..', join(upper, 'data', 'up'));
  return { layers: [lower, upper], remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Mount points under `dir`, with their type and options, from this process's mountinfo. */
function mountsUnder(dir: string): { target: string; type: string; options: string }[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const f = line.split(' ');
      const sep = f.indexOf('-');
      return { target: f[4], options: `${f[5]},${f[sep + 3] ?? ''}`, type: f[sep + 1] };
    })
    .filter((m) => m.target.startsWith(dir));
}

const volume = (image: string, over: Record<string, unknown> = {}) => ({ containerPath: '/vol', image: { image }, readonly: true, ...over });

test('image volumes: the image read-only at the path, or a path in it; refusals name the field and the image; nothing left after removal', {
  timeout: 120_000,
}, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const data = imageLayers();
  t.after(() => data.remove());
  const ID = `sha256:${'d'.repeat(64)}`;
  const ARM = `sha256:${'e'.repeat(64)}`;
  const {
    manager: m,
    pod,
    state,
  } = await startRuncContainers(t, {
    images: {
      'example.test/data:1': {
        id: ID,
        ref: `example.test/data@${ID}`,
        layers: data.layers,
        platform: { os: 'linux', architecture: process.arch === 'x64' ? 'amd64' : process.arch },
      },
      'example.test/data-arm:1': { id: ARM, ref: `example.test/data-arm@${ARM}`, layers: data.layers, platform: { os: 'linux', architecture: 's390x' } },
    },
  });
  const root = join(state, '..', 'root');
  const create = (name: string, mounts: Record<string, unknown>[], command = ['sh', '-c', 'sleep 3600']) =>
    m.create({
      podSandboxId: pod.id,
      config: ContainerConfig.fromPartial({ metadata: { name, attempt: 0 }, image: { image: 'busybox' }, command, mounts }),
      sandboxConfig: undefined,
    });
  const run = async (id: string, cmd: string[]) => {
    const r = await m.execSync(id, cmd, 30);
    return { code: r.exitCode, out: r.stdout.toString().trim(), err: r.stderr.toString().trim() };
  };

  await t.test('the whole image, both layers merged, read-only and not executable', async () => {
    const id = await create('whole', [volume('example.test/data:1'), { ...volume('example.test/data:1', { imageSubPath: 'data' }), containerPath: '/sub' }]);
    await m.start(id);
    await until('the container to run', async () => (await m.status(id)).state === ContainerState.CONTAINER_RUNNING);
    assert.deepEqual((await run(id, ['cat', '/vol/data/a.txt', '/vol/data/b.txt'])).out.split('\n'), ['from the lower layer', 'from the upper layer']);
    assert.equal((await run(id, ['cat', '/sub/a.txt'])).out, 'from the lower layer', 'the sub-path is the volume');
    assert.equal((await run(id, ['cat', '/vol/inside/b.txt'])).out, 'from the upper layer', 'a link within the image works');
    const write = await run(id, ['sh', '-c', 'echo x > /vol/data/new']);
    assert.notEqual(write.code, 0);
    assert.match(write.err, /read-only/i);
    const mountOptions = (await run(id, ['sh', '-c', 'grep " /vol " /proc/self/mounts'])).out;
    // Read-only, and nothing in the image runs as set-ID, as a device or at all.
    for (const option of ['ro', 'nosuid', 'nodev', 'noexec']) assert.match(mountOptions, new RegExp(`\\b${option}\\b`), `${option} in ${mountOptions}`);
    // On the host: one overlay over the layers as they are, with no upper directory to copy into.
    const host = mountsUnder(join(root, 'containers', id, 'image-volumes'));
    assert.equal(host.length, 2, JSON.stringify(host));
    for (const mount of host) {
      assert.equal(mount.type, 'overlay');
      assert.match(mount.options, /lowerdir=/);
      assert.doesNotMatch(mount.options, /upperdir=/);
    }
    await m.stop(id, 5);
    await m.remove(id);
    assert.deepEqual(mountsUnder(join(root, 'containers', id)), [], 'no mount left after removal');
  });

  await t.test('each bad request is refused with its code, naming the field and the image', async () => {
    const refused = async (mounts: Record<string, unknown>[], code: Status, message: RegExp) =>
      assert.rejects(create(`bad-${Math.random().toString(36).slice(2, 8)}`, mounts), (err: { code: Status; details: string }) => {
        assert.equal(err.code, code, err.details);
        assert.match(err.details, message);
        return true;
      });
    await refused([volume('example.test/missing:1')], Status.NOT_FOUND, /config\.mounts\[0\]\.image: the image example\.test\/missing:1 is not present/);
    await refused(
      [volume('example.test/data:1', { readonly: false })],
      Status.INVALID_ARGUMENT,
      /config\.mounts\[0\]\.readonly: .*example\.test\/data:1.*read-only/,
    );
    await refused(
      [volume('example.test/data:1', { imageSubPath: '../etc' })],
      Status.INVALID_ARGUMENT,
      /image_sub_path: "\.\.\/etc" must be a path inside the image example\.test\/data:1/,
    );
    await refused([volume('example.test/data:1', { imageSubPath: '/data' })], Status.INVALID_ARGUMENT, /image_sub_path: "\/data" must be a path inside/);
    await refused(
      [volume('example.test/data:1', { imageSubPath: 'nope' })],
      Status.FAILED_PRECONDITION,
      /image_sub_path: "nope" does not exist in the image example\.test\/data:1/,
    );
    await refused(
      [volume('example.test/data:1', { imageSubPath: 'outside' })],
      Status.FAILED_PRECONDITION,
      /"outside" leads out of the image example\.test\/data:1/,
    );
    await refused([volume('example.test/data:1', { imageSubPath: 'data/up' })], Status.FAILED_PRECONDITION, /"data\/up" leads out of the image/);
    await refused([volume('example.test/data-arm:1')], Status.FAILED_PRECONDITION, /the image example\.test\/data-arm:1 is for linux\/s390x/);
    await refused([volume('example.test/data:1', { hostPath: '/tmp' })], Status.INVALID_ARGUMENT, /host_path: set together with an image/);
    assert.deepEqual(mountsUnder(join(root, 'containers')), [], 'a refused create leaves no mount');
    assert.equal((await m.list()).length, 0);
  });
});
