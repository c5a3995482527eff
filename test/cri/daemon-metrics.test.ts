// skiffd's Prometheus endpoint ([metrics] address): scraped after real calls, it counts them by method
// and status with their latency, pods by state, image pulls and their bytes, and the process itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startImageFixtures } from '../support/image-fixtures.ts';
import { createTestNetwork, freePort, skiffdNetworkConfig } from '../support/netns.ts';
import { grpcCode, podConfig } from '../support/pods.ts';
import { needs } from '../support/prereq.ts';
import { startSkiffd } from '../support/skiffd.ts';

/** The value of one sample line, e.g. `skiffd_pods{state="SANDBOX_READY"}`; undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

test('metrics: Prometheus text on [metrics] address counts calls, pods and pulls', { timeout: 120_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon', 'docker-registry', 'unshare', 'nsenter', '/usr/lib/cni/bridge'] })) return;
  const dir = mkdtempSync(join(tmpdir(), 'skiffd-metrics-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const fixtures = await startImageFixtures();
  t.after(() => fixtures.registry.stop());
  const net = createTestNetwork(dir);
  t.after(() => net.cleanup());
  const port = await freePort();
  const d = await startSkiffd({
    config: `${skiffdNetworkConfig(net)}\n[metrics]\naddress = "127.0.0.1:${port}"\n[registry.configs."${fixtures.registry.host}"]\ninsecure = true\n`,
  });
  let podSandboxId = '';
  t.after(async () => {
    if (podSandboxId) await d.runtime.removePodSandbox({ podSandboxId }).catch(() => {});
    await d.cleanup();
  });
  const scrape = async () => {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5_000) });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    return res.text();
  };

  for (let i = 0; i < 3; i++) await d.runtime.version({});
  await grpcCode(d.runtime.podSandboxStatus({ podSandboxId: 'f'.repeat(64) }));
  ({ podSandboxId } = await d.runtime.runPodSandbox({ config: podConfig('metered') }));
  await d.images.pullImage({ image: { image: `${fixtures.registry.host}/test/app:oci` } });
  await grpcCode(d.images.pullImage({ image: { image: `${fixtures.registry.host}/test/absent:1` } }));

  const text = await scrape();
  assert.equal(sample(text, 'skiffd_grpc_requests_total{method="Version",code="OK"}'), 3);
  assert.equal(sample(text, 'skiffd_grpc_requests_total{method="PodSandboxStatus",code="NOT_FOUND"}'), 1);
  assert.equal(sample(text, 'skiffd_grpc_request_duration_seconds_count{method="RunPodSandbox"}'), 1);
  assert.ok((sample(text, 'skiffd_grpc_request_duration_seconds_sum{method="RunPodSandbox"}') ?? 0) > 0);
  assert.equal(sample(text, 'skiffd_pods{state="SANDBOX_READY"}'), 1);
  assert.equal(sample(text, 'skiffd_containers{state="CONTAINER_RUNNING"}'), 0);
  assert.equal(sample(text, 'skiffd_image_pulls_total{result="ok"}'), 1);
  assert.equal(sample(text, 'skiffd_image_pulls_total{result="error"}'), 1);
  const size = fixtures.oci.layers.reduce((s, l) => s + l.size, 0);
  assert.ok((sample(text, 'skiffd_image_pull_bytes_total') ?? 0) >= size, "the pulled image's bytes are counted");
  assert.ok((sample(text, 'skiffd_process_resident_memory_bytes') ?? 0) > 0);

  await d.runtime.stopPodSandbox({ podSandboxId });
  assert.equal(sample(await scrape(), 'skiffd_pods{state="SANDBOX_NOTREADY"}'), 1, 'pod states are read at scrape time');
  const other = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(5_000) });
  assert.equal(other.status, 404);
});
