// A daemon killed with SIGKILL in the middle of a layer download: the partial download never becomes
// a blob, the restarted daemon cleans it up, knows no half-pulled image, and pulls it again cleanly.
// A download cut by the network is retried once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { needs } from '../support/prereq.ts';
import { startSkiffd, removeDaemonDir } from '../support/skiffd.ts';
import { startRegistry } from '../support/registry.ts';
import { startHoldingProxy } from '../support/image-holding-proxy.ts';
import { buildImage, buildTar, busyboxBaseEntries, overlayTestEntries, Pusher } from '../support/image-builder.ts';

function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([p, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)))]).finally(() =>
    clearTimeout(timer),
  );
}

test('SIGKILL mid-pull: no partial blob, no half image, a clean pull after restart', async (t) => {
  if (!needs(t, { root: true, commands: ['docker-registry', 'setfattr'] })) return;
  const registry = await startRegistry();
  t.after(() => registry.stop());
  const image = buildImage({ format: 'docker', layers: [await buildTar(busyboxBaseEntries()), await buildTar(overlayTestEntries('crash'))], label: 'crash' });
  await new Pusher(registry.url).image('test/crash', image, 'v1');
  const big = image.layers[0];
  const proxy = await startHoldingProxy(registry.url, big.digest);
  t.after(() => proxy.stop());

  const dir = mkdtempSync(join(tmpdir(), 'skiffd-crash-'));
  t.after(() => removeDaemonDir(dir));
  const config = `[registry.configs."${proxy.host}"]\ninsecure = true\n`;
  const ref = `${proxy.host}/test/crash:v1`;
  let d = await startSkiffd({ dir, config });
  t.after(() => d.cleanup());
  const store = join(d.root, 'images');

  const pulling = d.images.pullImage({ image: { image: ref } }).then(
    () => 'finished',
    () => 'failed',
  );
  await within(20_000, 'the held blob download', proxy.held);
  // The daemon writes what it received so far to a temp file; wait (bounded) until it shows up.
  const partialBlob = async () => {
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 20))) {
      // Temp names start with blob-<first 12 hex of the digest>; other layers may be downloading too.
      const names = readdirSync(join(store, 'tmp')).filter((n) => n.startsWith(`blob-${big.digest.slice(7, 19)}-`));
      if (names.length && statSync(join(store, 'tmp', names[0])).size > 0) return names;
    }
    return [];
  };
  assert.equal((await partialBlob()).length, 1, 'the download is in progress in tmp/');
  assert.ok(!existsSync(join(store, 'blobs', 'sha256', big.digest.slice(7))), 'nothing is committed before it is complete');
  await d.stop('SIGKILL');
  assert.equal(await within(30_000, 'the interrupted PullImage', pulling), 'failed');
  await d.cleanup();
  proxy.release();

  d = await startSkiffd({ dir, config });
  assert.deepEqual(readdirSync(join(store, 'tmp')), [], 'leftovers are cleaned at startup');
  assert.ok(!existsSync(join(store, 'blobs', 'sha256', big.digest.slice(7))));
  assert.equal((await d.images.imageStatus({ image: { image: ref } })).image, undefined);
  assert.deepEqual((await d.images.listImages({})).images, []);

  const res = await d.images.pullImage({ image: { image: ref } });
  assert.equal(res.imageRef, image.config.digest);
  const dirs: string[] = JSON.parse((await d.images.imageStatus({ image: { image: ref }, verbose: true })).info.info).layerDirs;
  assert.equal(readFileSync(join(dirs[0], 'bin/busybox')).length, readFileSync('/bin/busybox').length);
  assert.equal(readFileSync(join(dirs[1], 'etc/marker'), 'utf8'), 'crash\n');
});

test('a download cut mid-way is retried once and the pull succeeds', async (t) => {
  if (!needs(t, { root: true, commands: ['docker-registry', 'setfattr'] })) return;
  const registry = await startRegistry();
  t.after(() => registry.stop());
  const image = buildImage({ format: 'oci', layers: [await buildTar(busyboxBaseEntries())], label: 'cut' });
  await new Pusher(registry.url).image('test/cut', image, 'v1');
  const proxy = await startHoldingProxy(registry.url, image.layers[0].digest, 64 * 1024, 'break-once');
  t.after(() => proxy.stop());
  const d = await startSkiffd({ config: `[registry.configs."${proxy.host}"]\ninsecure = true\n` });
  t.after(() => d.cleanup());
  const res = await d.images.pullImage({ image: { image: `${proxy.host}/test/cut:v1` } });
  assert.equal(res.imageRef, image.config.digest);
  await within(1000, 'the cut', proxy.held);
  assert.match(d.logs(), /blob download failed, retrying once/);
  assert.deepEqual(readdirSync(join(d.root, 'images', 'tmp')), []);
});
