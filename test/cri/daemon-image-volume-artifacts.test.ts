// OCI artifacts as image volumes, pushed with the real `oras` to a registry and pulled through skiffd's
// CRI: laid out as CRI-O lays them out (each layer a file named by its title annotation, tar layers
// included, not unpacked), mounted read-only, one file as a sub-path; refused when they cannot be run,
// laid out, or are too large; and kept across a restart of skiffd.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { Status } from 'nice-grpc';
import { NamespaceMode } from '../../proto/gen/runtime/v1/api.ts';
import { kitMissing, startKitRegistry } from '../support/cri-conformance.ts';
import { mountsUnder } from '../support/kubelet-host.ts';
import { freePort } from '../support/netns.ts';
import { fetchOras, oras } from '../support/oras.ts';
import { grpcCode, podConfig } from '../support/pods.ts';
import { needs, unavailable } from '../support/prereq.ts';
import { startSkiffd, removeDaemonDir } from '../support/skiffd.ts';

const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';
const BOUND = 1024 * 1024;

const digestOf = (data: Buffer | string) => `sha256:${createHash('sha256').update(data).digest('hex')}`;

test('OCI artifacts pushed with oras: pulled, listed, mounted as CRI-O lays them out, read-only; refusals', { timeout: 300_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon', 'docker-registry'] })) return;
  const missing = kitMissing('1.36');
  if (missing) return unavailable(t, missing);
  const found = await fetchOras();
  if ('missing' in found) return unavailable(t, found.missing);
  const registry = await startKitRegistry(await freePort());
  t.after(() => registry.stop());
  const dir = mkdtempSync(join(tmpdir(), 'skiff-artifacts-'));
  t.after(() => removeDaemonDir(dir));
  const work = join(dir, 'push');
  execFileSync('mkdir', ['-p', work]);
  const run = (...args: string[]) => oras(found.bin, [...args, '--plain-http'], work);
  const host = `127.0.0.1:${registry.port}`;

  // The model: a raw blob and a JSON file (oras gives a file with no media type its tar type, unpacked or not).
  const weights = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7) % 256));
  writeFileSync(join(work, 'weights.bin'), weights);
  writeFileSync(join(work, 'config.json'), '{"layers": 2}\n');
  const tiny = `${host}/models/tiny:v1`;
  await run('push', tiny, '--artifact-type', 'application/vnd.example.model', 'weights.bin:application/octet-stream', 'config.json');
  // A tar layer: CRI-O mounts it as the file it is, named by its title, as it does every other layer.
  execFileSync('tar', ['-cf', join(work, 'layer.tar'), '-C', work, 'config.json']);
  const tarred = `${host}/models/tarred:v1`;
  await run('push', tarred, '--artifact-type', 'application/vnd.example.bundle', 'layer.tar:application/vnd.oci.image.layer.v1.tar');
  // Larger than the daemon's bound.
  writeFileSync(join(work, 'big.bin'), Buffer.alloc(BOUND + 1, 1));
  const big = `${host}/models/big:v1`;
  await run('push', big, '--artifact-type', 'application/vnd.example.model', 'big.bin:application/octet-stream');
  // Layouts no volume can have, pushed as blobs and a manifest written here.
  writeFileSync(join(work, 'empty.json'), '{}');
  writeFileSync(join(work, 'a.bin'), 'a\n');
  await run('blob', 'push', `${host}/models/bad`, 'empty.json');
  await run('blob', 'push', `${host}/models/bad`, 'a.bin');
  const layer = (title?: string) => ({
    mediaType: 'application/octet-stream',
    digest: digestOf('a\n'),
    size: 2,
    ...(title === undefined ? {} : { annotations: { 'org.opencontainers.image.title': title } }),
  });
  const bad: Record<string, object[]> = { notitle: [layer()], traversal: [layer('../evil')], slash: [layer('dir/evil')], twice: [layer('a'), layer('a')] };
  // A ModelPack model names its file with org.cncf.model.filepath; a layer with no name is left out, as CRI-O leaves it.
  const modelpack = [
    { mediaType: 'application/vnd.cncf.model.weight.v1.raw', digest: digestOf('a\n'), size: 2, annotations: { 'org.cncf.model.filepath': 'model.bin' } },
    layer(),
  ];
  for (const [tag, layers] of Object.entries({ ...bad, modelpack })) {
    const manifest = {
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      artifactType: 'application/vnd.example.model',
      config: { mediaType: 'application/vnd.oci.empty.v1+json', digest: digestOf('{}'), size: 2 },
      layers,
    };
    writeFileSync(join(work, `${tag}.json`), JSON.stringify(manifest));
    await run('manifest', 'push', `${host}/models/bad:${tag}`, `${tag}.json`);
  }

  const config = `[registry]\nmax_artifact_size = ${BOUND}\n${registry.mirrorsToml}`;
  let d = await startSkiffd({ dir, config });
  t.after(() => d.cleanup());
  await d.images.pullImage({ image: { image: BUSYBOX } });

  // PullImage stores the artifact; ImageStatus and ListImages show it with its size.
  const pulled = await d.images.pullImage({ image: { image: tiny } });
  const status = (await d.images.imageStatus({ image: { image: tiny } })).image;
  assert.ok(status, 'ImageStatus knows the artifact');
  assert.equal(status.id, pulled.imageRef);
  assert.deepEqual(status.repoTags, [tiny]);
  assert.ok(status.size >= BigInt(weights.length + 14), `size ${status.size} counts the layers`);
  assert.ok(
    (await d.images.listImages({})).images.some((i) => i.id === status.id),
    'ListImages lists it',
  );
  await d.images.pullImage({ image: { image: tarred } });

  // Too large: refused before anything is downloaded.
  const tooBig = await grpcCode(d.images.pullImage({ image: { image: big } }));
  assert.equal(tooBig.code, Status.FAILED_PRECONDITION, tooBig.details);
  assert.match(tooBig.details, new RegExp(`is ${BOUND + 1 + 2} bytes, more than registry\\.max_artifact_size \\(${BOUND} bytes\\)`));
  assert.equal((await d.images.imageStatus({ image: { image: big } })).image, undefined);

  const sandboxConfig = podConfig('artifacts', { network: NamespaceMode.NODE });
  const { podSandboxId } = await d.runtime.runPodSandbox({ config: sandboxConfig });
  const create = (name: string, image: string, mounts: Record<string, unknown>[]) =>
    d.runtime.createContainer({ podSandboxId, sandboxConfig, config: { metadata: { name }, image: { image }, command: ['sleep', '3600'], mounts } });

  // An artifact cannot be run.
  const asImage = await grpcCode(create('run-artifact', tiny, []));
  assert.equal(asImage.code, Status.FAILED_PRECONDITION, asImage.details);
  assert.match(asImage.details, /is an OCI artifact \(application\/vnd\.example\.model\), not a container image/);

  const { containerId } = await create('reader', BUSYBOX, [
    { containerPath: '/models', image: { image: tiny }, readonly: true },
    { containerPath: '/weights.bin', image: { image: tiny }, imageSubPath: 'weights.bin', readonly: true },
    { containerPath: '/bundle', image: { image: tarred }, readonly: true },
  ]);
  await d.runtime.startContainer({ containerId });
  const sh = async (script: string) => {
    const r = await d.runtime.execSync({ containerId, cmd: ['sh', '-c', script], timeout: 10n });
    return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
  };
  assert.equal((await sh('ls /models')).out, 'config.json\nweights.bin\n', 'one file per layer, named by its title');
  assert.equal((await sh('cat /models/config.json')).out, '{"layers": 2}\n');
  assert.equal((await sh('md5sum < /models/weights.bin')).out.split(' ')[0], createHash('md5').update(weights).digest('hex'));
  assert.equal((await sh('md5sum < /weights.bin')).out.split(' ')[0], createHash('md5').update(weights).digest('hex'), 'the sub-path is the one file');
  assert.equal((await sh('ls /bundle && tar -tf /bundle/layer.tar')).out, 'layer.tar\nconfig.json\n', 'a tar layer is its file, not unpacked');
  const modelRef = `${host}/models/bad:modelpack`;
  await d.images.pullImage({ image: { image: modelRef } });
  const model = await create('model', BUSYBOX, [{ containerPath: '/model', image: { image: modelRef }, readonly: true }]);
  await d.runtime.startContainer({ containerId: model.containerId });
  const inModel = await d.runtime.execSync({ containerId: model.containerId, cmd: ['sh', '-c', 'ls /model && cat /model/model.bin'], timeout: 10n });
  assert.equal(inModel.stdout.toString(), 'model.bin\na\n', 'the ModelPack file is named by its file path; the unnamed layer is left out');
  for (const write of ['echo x > /models/new', 'echo x >> /models/weights.bin', 'echo x >> /weights.bin', 'rm /models/config.json']) {
    const r = await sh(write);
    assert.notEqual(r.code, 0, `${write} must fail`);
    assert.match(r.err, /Read-only file system/, write);
  }
  assert.equal((await sh('md5sum < /models/weights.bin')).out.split(' ')[0], createHash('md5').update(weights).digest('hex'), 'unchanged');

  // Layouts that cannot be mounted: pulled and stored, as CRI-O pulls them, then refused as volumes.
  const reasons: Record<string, RegExp> = {
    notitle:
      /no layer has an org\.opencontainers\.image\.title or org\.cncf\.model\.filepath annotation to name its file \(layer 0 \(sha256:[0-9a-f]{64}, application\/octet-stream\)\)/,
    traversal: /layer 0 \(sha256:[0-9a-f]{64}\) is titled "\.\.\/evil", which is not a plain file name/,
    slash: /is titled "dir\/evil", which is not a plain file name/,
    twice: /layers 0 and 1 are both titled "a"/,
  };
  for (const [tag, reason] of Object.entries(reasons)) {
    const ref = `${host}/models/bad:${tag}`;
    await d.images.pullImage({ image: { image: ref } });
    const err = await grpcCode(create(`bad-${tag}`, BUSYBOX, [{ containerPath: '/m', image: { image: ref }, readonly: true }]));
    assert.equal(err.code, Status.FAILED_PRECONDITION, err.details);
    assert.match(err.details, /config\.mounts\[0\]\.image: the OCI artifact .* cannot be mounted: /);
    assert.match(err.details, reason);
  }

  // A restart keeps the artifact and its volume.
  d.channel.close();
  d.child.kill('SIGKILL');
  await d.exited;
  d = await startSkiffd({ dir, config });
  assert.equal((await d.images.imageStatus({ image: { image: tiny } })).image?.id, status.id, 'the artifact is still stored');
  assert.equal((await sh('cat /models/config.json')).out, '{"layers": 2}\n');

  await d.runtime.stopPodSandbox({ podSandboxId });
  await d.runtime.removePodSandbox({ podSandboxId });
  assert.deepEqual(mountsUnder(join(d.root, 'containers')), [], 'no mount left');
  // Removed, the artifact's tree of files is collected with it.
  const trees = () => readdirSync(join(d.root, 'images', 'layers')).length;
  const before = trees();
  await d.images.removeImage({ image: { image: tiny } });
  await d.images.removeImage({ image: { image: tarred } });
  assert.equal(trees(), before - 2);
});
