// skiffd's ImageService against a real docker-registry on loopback, driven over the daemon's socket
// with the real gRPC client: pulls by tag and digest, docker.io normalisation through a mirror,
// Docker and OCI manifests, indexes, status/list/remove semantics, shared work, restart, corruption.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  writeFileSync,
  writeSync,
  closeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Status } from 'nice-grpc';
import { grpcError } from '../support/grpc.ts';
import { needs } from '../support/prereq.ts';
import { startSkiffd, type ImageClient, type SkiffdHandle, removeDaemonDir } from '../support/skiffd.ts';
import { registryBlobPath, startImageFixtures, type ImageFixtures } from '../support/image-fixtures.ts';

const pull = (images: ImageClient, image: string) => images.pullImage({ image: { image } });
const status = async (images: ImageClient, image: string, verbose = false) => images.imageStatus({ image: { image }, verbose });
const tagsOf = async (images: ImageClient) => (await images.listImages({})).images.flatMap((i) => i.repoTags).sort();

function imageConfig(host: string): string {
  // The first docker.io mirror refuses connections: the pull must move on to the second.
  return [
    '[registry.mirrors."docker.io"]',
    `endpoints = ["http://127.0.0.1:1", "http://${host}"]`,
    '[registry.mirrors."registry.k8s.io"]',
    `endpoints = ["http://${host}"]`,
    `[registry.configs."${host}"]`,
    'insecure = true',
  ].join('\n');
}

test('ImageService over a real registry', async (t) => {
  if (!needs(t, { root: true, commands: ['docker-registry', 'setfattr', 'mknod'] })) return;
  const fx: ImageFixtures = await startImageFixtures();
  t.after(() => fx.registry.stop());
  const R = fx.registry.host;
  const dir = mkdtempSync(join(tmpdir(), 'skiffd-images-'));
  t.after(() => removeDaemonDir(dir));
  const config = imageConfig(R);
  let d: SkiffdHandle = await startSkiffd({ dir, config });
  t.after(() => d.cleanup());

  await t.test('pull by tag: Docker schema2 image, id is the config digest, tag and repo digest recorded', async () => {
    const res = await pull(d.images, `${R}/test/app:docker`);
    assert.equal(res.imageRef, fx.docker.config.digest);
    const s = await status(d.images, `${R}/test/app:docker`);
    assert.equal(s.image?.id, fx.docker.config.digest);
    assert.deepEqual(s.image?.repoTags, [`${R}/test/app:docker`]);
    assert.deepEqual(s.image?.repoDigests, [`${R}/test/app@${fx.docker.manifest.digest}`]);
    const expectedSize = fx.docker.config.size + fx.docker.manifest.size + fx.docker.layers.reduce((n, l) => n + l.size, 0);
    assert.equal(s.image?.size, BigInt(expectedSize));
    assert.equal(s.image?.uid?.value, 1000n, 'User "1000" is a uid');
    assert.equal(s.image?.username, '');
  });

  await t.test('the unpacked layers are ready for overlayfs: whiteouts, opaque dir, hard link, devices, owners, modes', async () => {
    const s = await status(d.images, fx.docker.config.digest, true);
    const info = JSON.parse(s.info.info);
    assert.equal(info.layerDirs.length, 2);
    const [base, top] = info.layerDirs as string[];
    assert.equal(readlinkSync(join(base, 'bin/sh')), 'busybox');
    assert.equal(statSync(join(base, 'bin/busybox')).mode & 0o7777, 0o755);
    const devnull = lstatSync(join(base, 'dev/null'));
    assert.ok(devnull.isCharacterDevice());
    assert.equal(devnull.rdev, (1 << 8) | 3);
    assert.equal(lstatSync(join(base, 'home/app')).uid, 1000);
    assert.equal(statSync(join(base, 'tmp')).mode & 0o7777, 0o1777);
    const whiteout = lstatSync(join(top, 'etc/to-remove'));
    assert.ok(whiteout.isCharacterDevice(), 'a .wh. file becomes a character device');
    assert.equal(whiteout.rdev, 0);
    assert.ok(!existsSync(join(top, 'etc/.wh.to-remove')));
    const xattr = execFileSync('getfattr', ['--only-values', '-n', 'trusted.overlay.opaque', join(top, 'opt/old')]).toString();
    assert.equal(xattr, 'y');
    const a = statSync(join(top, 'usr/share/data.txt'));
    const b = statSync(join(top, 'usr/share/data-link.txt'));
    assert.equal(a.ino, b.ino, 'hard link shares the inode');
    assert.equal(a.nlink, 2);
    assert.equal(a.uid, 1000);
    assert.equal(a.mode & 0o7777, 0o640);
    assert.equal(statSync(join(top, 'usr/bin/setuid-tool')).mode & 0o7777, 0o4755);
    // The image config for the container runtime.
    assert.deepEqual(info.imageSpec.config.Cmd, ['/bin/sh', '-c', 'echo hi']);
    assert.equal(info.imageSpec.config.WorkingDir, '/home/app');
    assert.equal(info.imageSpec.config.StopSignal, 'SIGINT');
  });

  await t.test('OCI manifest; two tags of one manifest collapse into one image; username from "app:app"', async () => {
    const a = await pull(d.images, `${R}/test/app:oci`);
    const b = await pull(d.images, `${R}/test/app:v2`);
    assert.equal(a.imageRef, fx.oci.config.digest);
    assert.equal(b.imageRef, a.imageRef);
    const s = await status(d.images, `${R}/test/app:v2`);
    assert.deepEqual([...s.image!.repoTags].sort(), [`${R}/test/app:oci`, `${R}/test/app:v2`]);
    assert.deepEqual(s.image?.repoDigests, [`${R}/test/app@${fx.oci.manifest.digest}`]);
    assert.equal(s.image?.uid, undefined);
    assert.equal(s.image?.username, 'app');
    // Both images share the base layer: one directory.
    const dirsA = JSON.parse((await status(d.images, a.imageRef, true)).info.info).layerDirs;
    const dirsB = JSON.parse((await status(d.images, fx.docker.config.digest, true)).info.info).layerDirs;
    assert.equal(dirsA[0], dirsB[0]);
  });

  await t.test('pull by digest: no tag, a repo digest', async () => {
    const ref = `${R}/test/fragile@${fx.fragile.manifest.digest}`;
    const res = await pull(d.images, ref);
    assert.equal(res.imageRef, fx.fragile.config.digest);
    const s = await status(d.images, ref);
    assert.deepEqual(s.image?.repoTags, []);
    assert.deepEqual(s.image?.repoDigests, [ref]);
    await d.images.removeImage({ image: { image: ref } });
    assert.equal((await status(d.images, ref)).image, undefined, 'removed by digest');
  });

  await t.test('OCI index and Docker manifest list: the host platform is picked', async () => {
    const a = await pull(d.images, `${R}/test/multi`); // no tag means :latest
    assert.equal(a.imageRef, fx.multiHost.config.digest);
    const s = await status(d.images, `${R}/test/multi:latest`);
    assert.deepEqual(s.image?.repoDigests, [`${R}/test/multi@${fx.ociIndex.digest}`], 'the repo digest is the index digest');
    assert.equal(s.image?.uid?.value, 1000n, 'User "1000:1000"');
    const b = await pull(d.images, `${R}/test/multi-docker`);
    const sb = await status(d.images, b.imageRef, true);
    assert.equal(JSON.parse(sb.info.info).imageSpec.architecture, fx.multiHost.platform.architecture);
  });

  await t.test('docker.io normalisation: "busybox" is docker.io/library/busybox:latest, pulled through the mirror; a registry.k8s.io mirror', async () => {
    const res = await pull(d.images, 'busybox');
    assert.equal(res.imageRef, fx.busybox.config.digest);
    const s = await status(d.images, 'docker.io/library/busybox:latest');
    assert.deepEqual(s.image?.repoTags, ['docker.io/library/busybox:latest']);
    assert.deepEqual(s.image?.repoDigests, [`docker.io/library/busybox@${fx.busybox.manifest.digest}`]);
    assert.equal((await status(d.images, 'library/busybox')).image?.id, res.imageRef);
    assert.equal((await status(d.images, 'busybox:latest')).image?.id, res.imageRef);
    // Another registry's mirror: registry.k8s.io/pause:3.9 comes from the same local registry.
    const pause = await pull(d.images, 'registry.k8s.io/pause:3.9');
    assert.equal(pause.imageRef, fx.busybox.config.digest, 'same content, same image');
    const s2 = await status(d.images, 'registry.k8s.io/pause:3.9');
    assert.deepEqual([...s2.image!.repoTags].sort(), ['docker.io/library/busybox:latest', 'registry.k8s.io/pause:3.9']);
    await d.images.removeImage({ image: { image: 'registry.k8s.io/pause:3.9' } });
    assert.equal((await status(d.images, 'busybox')).image, undefined, 'removing one name removed the image under both');
    await pull(d.images, 'busybox');
  });

  await t.test('ListImages (and StreamImages) list every image and filter by spec; ImageStatus of an absent image is empty', async () => {
    const all = await d.images.listImages({});
    const ids = all.images.map((i) => i.id).sort();
    assert.deepEqual(
      ids,
      [
        fx.docker.config.digest,
        fx.oci.config.digest,
        fx.multiHost.config.digest,
        fx.busybox.config.digest,
        (await status(d.images, `${R}/test/multi-docker`)).image!.id,
      ].sort(),
    );
    const streamed: string[] = [];
    for await (const chunk of d.images.streamImages({})) streamed.push(...chunk.images.map((i) => i.id));
    assert.deepEqual(streamed.sort(), ids, 'StreamImages sends the same images');
    const filtered = await d.images.listImages({ filter: { image: { image: `${R}/test/app:oci` } } });
    assert.deepEqual(
      filtered.images.map((i) => i.id),
      [fx.oci.config.digest],
    );
    assert.deepEqual((await d.images.listImages({ filter: { image: { image: `${R}/nothing:here` } } })).images, []);
    const absent = await status(d.images, `${R}/test/nothing:here`);
    assert.equal(absent.image, undefined);
    assert.deepEqual(absent.info, {});
  });

  await t.test('ImageFsInfo reports the store usage and its mount', async () => {
    const res = await d.images.imageFsInfo({});
    const fs = res.imageFilesystems[0];
    assert.ok(fs.fsId!.mountpoint.startsWith('/'));
    assert.ok(fs.usedBytes!.value > 2_000_000n, `used ${fs.usedBytes!.value}`);
    assert.ok(fs.inodesUsed!.value > 20n);
    assert.ok(fs.timestamp > 0n);
  });

  await t.test('errors: unknown tag is NOT_FOUND, a bad reference INVALID_ARGUMENT, an empty spec INVALID_ARGUMENT', async () => {
    const nf = await grpcError(pull(d.images, `${R}/test/app:nope`));
    assert.equal(nf.code, Status.NOT_FOUND, nf.details);
    const bad = await grpcError(pull(d.images, `${R}/Test/UPPER:x`));
    assert.equal(bad.code, Status.INVALID_ARGUMENT, bad.details);
    const empty = await grpcError(pull(d.images, ''));
    assert.equal(empty.code, Status.INVALID_ARGUMENT);
  });

  await t.test('two concurrent pulls of one image share the work', async () => {
    await d.images.removeImage({ image: { image: `${R}/test/app:docker` } });
    const before = d.logs().length;
    const [a, b] = await Promise.all([pull(d.images, `${R}/test/app:docker`), pull(d.images, `${R}/test/app:docker`)]);
    assert.equal(a.imageRef, b.imageRef);
    const log = d.logs().slice(before);
    assert.match(log, /joining a pull already in progress/);
    assert.equal(log.match(/msg="pulling image"/g)?.length, 1, log);
  });

  await t.test('two concurrent pulls of different images download a shared layer once', async () => {
    for (const ref of [`${R}/test/app:docker`, `${R}/test/app:oci`, 'busybox', `${R}/test/multi`, `${R}/test/multi-docker`]) {
      await d.images.removeImage({ image: { image: ref } });
    }
    assert.deepEqual((await d.images.listImages({})).images, [], 'the base layer is no longer stored');
    const before = d.logs().length;
    const [a, b] = await Promise.all([pull(d.images, `${R}/test/app:docker`), pull(d.images, `${R}/test/app:oci`)]);
    assert.equal(a.imageRef, fx.docker.config.digest);
    assert.equal(b.imageRef, fx.oci.config.digest);
    const log = d.logs().slice(before);
    assert.equal(log.match(/msg="pulling image"/g)?.length, 2, log);
    const baseDigest = fx.docker.layers[0].digest;
    assert.equal(fx.oci.layers[0].digest, baseDigest);
    assert.equal(log.split('\n').filter((l) => l.includes('msg="downloading layer"') && l.includes(baseDigest)).length, 1, log);
    for (const ref of [`${R}/test/app:v2`, 'busybox', `${R}/test/multi`, `${R}/test/multi-docker`]) await pull(d.images, ref);
  });

  await t.test('restart: images survive; leftovers of a crashed pull are cleaned; a half-unpacked layer is never used', async () => {
    const before = await d.images.listImages({});
    assert.equal((await d.stop('SIGKILL')).signal, 'SIGKILL');
    await d.cleanup();
    // What a crash mid-pull leaves: a partial download and a half-unpacked layer in tmp/, a torn record.
    const store = join(d.root, 'images');
    mkdirSync(join(store, 'tmp', 'layer-abc-123', 'fs', 'etc'), { recursive: true });
    writeFileSync(join(store, 'tmp', 'blob-partial'), 'half');
    writeFileSync(join(store, 'records', '.tmp-deadbeef.json-123'), '{"version":');
    d = await startSkiffd({ dir, config });
    const after = await d.images.listImages({});
    const key = (l: typeof before) => l.images.map((i) => `${i.id} ${[...i.repoTags].sort()} ${[...i.repoDigests].sort()}`).sort();
    assert.deepEqual(key(after), key(before));
    assert.deepEqual(readdirSync(join(store, 'tmp')), []);
    assert.ok(!readdirSync(join(store, 'records')).some((n) => n.startsWith('.tmp-')));
    assert.equal((await pull(d.images, `${R}/test/app:oci`)).imageRef, fx.oci.config.digest);
  });

  await t.test('RemoveImage by one tag removes every tag; by id; absent is fine; shared layers stay for other images', async () => {
    const dockerDirs: string[] = JSON.parse((await status(d.images, fx.docker.config.digest, true)).info.info).layerDirs;
    const usedBefore = (await d.images.imageFsInfo({})).imageFilesystems[0].usedBytes!.value;
    await d.images.removeImage({ image: { image: `${R}/test/app:v2` } });
    assert.equal((await status(d.images, `${R}/test/app:oci`)).image, undefined, 'all tags of the image are gone');
    assert.ok(!(await tagsOf(d.images)).some((t) => t.startsWith(`${R}/test/app:oci`) || t === `${R}/test/app:v2`));
    for (const dir of dockerDirs) assert.ok(existsSync(dir), `layer ${dir} is still used by test/app:docker`);
    await d.images.removeImage({ image: { image: fx.docker.config.digest } });
    assert.equal((await status(d.images, `${R}/test/app:docker`)).image, undefined);
    assert.ok(!existsSync(dockerDirs[1]), 'a layer no image uses is removed');
    assert.ok(existsSync(dockerDirs[0]), 'the base layer is still used by other images');
    await d.images.removeImage({ image: { image: fx.docker.config.digest } });
    await d.images.removeImage({ image: { image: `${R}/test/app:docker` } });
    const usedAfter = (await d.images.imageFsInfo({})).imageFilesystems[0].usedBytes!.value;
    assert.ok(usedAfter < usedBefore, `${usedAfter} < ${usedBefore}`);
  });

  await t.test('a corrupt blob in the registry is refused and nothing of it is stored', async () => {
    const layer = fx.fragile.layers[1];
    const data = registryBlobPath(fx.registry.storageDir, layer.digest);
    const fd = openSync(data, 'r+');
    writeSync(fd, Buffer.from('corrupt!'), 0, 8, 40);
    closeSync(fd);
    const err = await grpcError(pull(d.images, `${R}/test/fragile:latest`));
    assert.equal(err.code, Status.DATA_LOSS, err.details);
    assert.match(err.details, new RegExp(layer.digest));
    assert.equal((await status(d.images, `${R}/test/fragile:latest`)).image, undefined);
    const store = join(d.root, 'images');
    assert.ok(!existsSync(join(store, 'blobs', 'sha256', layer.digest.slice(7))), 'the corrupt blob was not stored');
    assert.deepEqual(readdirSync(join(store, 'tmp')), [], 'no partial download left behind');
    assert.ok(!readFileSync(data).subarray(40, 48).equals(Buffer.alloc(8)));
  });
});
