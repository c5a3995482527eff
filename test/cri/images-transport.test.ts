// How skiffd reaches registries: a TLS registry with a self-signed certificate is refused unless
// its host is `insecure = true`; zstd-compressed OCI layers; a tag that moves to another image.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Status } from 'nice-grpc';
import { grpcError } from '../support/grpc.ts';
import { needs } from '../support/prereq.ts';
import { startSkiffd } from '../support/skiffd.ts';
import { selfSignedCert, startRegistry } from '../support/registry.ts';
import { buildImage, buildTar, busyboxBaseEntries, overlayTestEntries, Pusher } from '../support/image-builder.ts';

test('registry transport: unverified TLS when insecure, zstd layers, moving tags', async (t) => {
  if (!needs(t, { root: true, commands: ['docker-registry', 'openssl', 'zstd', 'setfattr'] })) return;
  const dir = mkdtempSync(join(tmpdir(), 'skiff-transport-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const storage = join(dir, 'storage');
  const open = await startRegistry({ storageDir: storage });
  t.after(() => open.stop());
  const tls = selfSignedCert(dir);
  const trusted = await startRegistry({ storageDir: storage, tls }); // not marked insecure: must fail
  t.after(() => trusted.stop());
  const insecure = await startRegistry({ storageDir: storage, tls });
  t.after(() => insecure.stop());

  const base = await buildTar(busyboxBaseEntries());
  const zstdImage = buildImage({ format: 'oci', layers: [base, await buildTar(overlayTestEntries('zstd'))], compression: 'zstd', label: 'zstd' });
  const first = buildImage({ format: 'oci', layers: [base], label: 'first' });
  const second = buildImage({ format: 'oci', layers: [base], label: 'second' });
  const push = new Pusher(open.url);
  await push.image('test/zstd', zstdImage, 'latest');
  await push.image('test/moving', first, 'latest');

  const config = [`[registry.configs."${insecure.host}"]`, 'insecure = true', `[registry.configs."${open.host}"]`, 'insecure = true'].join('\n');
  const d = await startSkiffd({ config });
  t.after(() => d.cleanup());

  await t.test('a self-signed TLS registry is refused without insecure = true (UNAVAILABLE, names the certificate)', async () => {
    const err = await grpcError(d.images.pullImage({ image: { image: `${trusted.host}/test/zstd:latest` } }));
    assert.equal(err.code, Status.UNAVAILABLE, err.details);
    assert.match(err.details, /certificate/i);
  });

  await t.test('with insecure = true the same registry is pulled from over unverified TLS', async () => {
    const res = await d.images.pullImage({ image: { image: `${insecure.host}/test/moving:latest` } });
    assert.equal(res.imageRef, first.config.digest);
  });

  await t.test('zstd-compressed OCI layers are unpacked and checked against their diff ids', async () => {
    const res = await d.images.pullImage({ image: { image: `${insecure.host}/test/zstd:latest` } });
    assert.equal(res.imageRef, zstdImage.config.digest);
    const info = JSON.parse((await d.images.imageStatus({ image: { image: res.imageRef }, verbose: true })).info.info);
    assert.equal(readFileSync(join(info.layerDirs[1], 'etc/marker'), 'utf8'), 'zstd\n');
  });

  await t.test('a tag pulled again after it moved points at the new image; the old one keeps its digest', async () => {
    const ref = `${open.host}/test/moving:latest`;
    assert.equal((await d.images.pullImage({ image: { image: ref } })).imageRef, first.config.digest);
    // Re-push moves the tag in the registry.
    await push.image('test/moving', second, 'latest');
    assert.equal((await d.images.pullImage({ image: { image: ref } })).imageRef, second.config.digest);
    const old = (await d.images.imageStatus({ image: { image: first.config.digest } })).image!;
    assert.ok(!old.repoTags.includes(ref), 'the tag left the old image');
    assert.ok(old.repoDigests.includes(`${open.host}/test/moving@${first.manifest.digest}`));
    assert.deepEqual((await d.images.imageStatus({ image: { image: ref } })).image?.id, second.config.digest);
  });
});
