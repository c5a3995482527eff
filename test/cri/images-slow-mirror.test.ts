// A mirror that stalls in the middle of a download: once the connection has made no progress for
// `[registry] pull_progress_timeout`, the pull moves on to the next endpoint and finishes there, and the
// debug log shows where each layer came from.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { needs } from '../support/prereq.ts';
import { startSkiffd } from '../support/skiffd.ts';
import { startRegistry } from '../support/registry.ts';
import { startHoldingProxy } from '../support/image-holding-proxy.ts';
import { buildImage, buildTar, busyboxBaseEntries, Pusher } from '../support/image-builder.ts';

test('a mirror that stalls mid-download is skipped for the next endpoint after pull_progress_timeout', { timeout: 180_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['docker-registry', 'setfattr'] })) return;
  const registry = await startRegistry();
  t.after(() => registry.stop());
  const image = buildImage({ format: 'oci', layers: [await buildTar(busyboxBaseEntries())], label: 'slow' });
  await new Pusher(registry.url).image('test/slow', image, 'v1');
  // The mirror answers the manifest, then holds the layer after its first bytes, and never lets go.
  const mirror = await startHoldingProxy(registry.url, image.layers[0].digest, 64 * 1024, 'hold');
  t.after(() => {
    mirror.release();
    return mirror.stop();
  });
  const upstream = new URL(registry.url).host;
  const certsDir = mkdtempSync(join(tmpdir(), 'skiff-certs-'));
  t.after(() => rmSync(certsDir, { recursive: true, force: true }));
  mkdirSync(join(certsDir, upstream));
  writeFileSync(
    join(certsDir, upstream, 'hosts.toml'),
    `server = "http://${upstream}"\n\n[host."http://${mirror.host}"]\ncapabilities = ["pull", "resolve"]\n`,
  );
  const d = await startSkiffd({ config: `[registry]\nconfig_path = "${certsDir}"\npull_progress_timeout = "2s"\n`, args: ['--log-level', 'debug'] });
  t.after(() => d.cleanup());

  const res = await d.images.pullImage({ image: { image: `${upstream}/test/slow:v1` } });
  assert.equal(res.imageRef, image.config.digest);
  await mirror.held; // the mirror was asked for the layer first, and stalled
  const logs = d.logs();
  const layer = image.layers[0].digest;
  const line = (msg: string) => logs.split('\n').filter((l) => l.includes(msg) && l.includes(layer));
  assert.equal(line('blob download failed, retrying once').length, 1, logs);
  assert.match(line('blob download failed, retrying once')[0], new RegExp(`from=${mirror.host.replace(/\./g, '\\.')}`));
  assert.match(line('blob download failed, retrying once')[0], /no progress for 2000 ms/, 'the stall is named as such');
  assert.deepEqual(
    line('layer download started').map((l) => /from=(\S+)/.exec(l)?.[1]),
    [mirror.host, upstream],
    'the layer was asked of the mirror, then of the registry itself',
  );
  assert.match(line('layer downloaded')[0] ?? '', new RegExp(`from=${upstream.replace(/\./g, '\\.')}`));
});
