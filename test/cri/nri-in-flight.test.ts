// What is under way when a plugin acts. A plugin that connects while a container is being created
// never hears of it only from events: its Synchronize shows the container (or it is told of the
// create itself), so every event it gets names a container it knows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PodSandboxConfig, DeepPartial } from '../../proto/gen/runtime/v1/api.ts';
import { kitMissing, startKitRegistry } from '../support/cri-conformance.ts';
import { freePort } from '../support/registry.ts';
import { connectTestPlugin, type TestPlugin } from '../support/nri-test-plugin.ts';
import { podConfig } from '../support/pods.ts';
import { needs, unavailable } from '../support/prereq.ts';
import { startSkiffd } from '../support/skiffd.ts';
import { until } from '../support/wait.ts';

const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';

test('NRI: what is in flight when a plugin connects', { timeout: 600_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon', 'docker-registry'] })) return;
  const missing = kitMissing();
  if (missing) return unavailable(t, missing);
  const dir = mkdtempSync(join(tmpdir(), 'skiff-nri-in-flight-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const socketDir = join(dir, 'nri');
  mkdirSync(socketDir);
  const socket = join(socketDir, 'nri.sock');
  const registry = await startKitRegistry(await freePort());
  t.after(() => registry.stop());
  // A long request timeout: a plugin of the test holds CreateContainer while another connects.
  const d = await startSkiffd({
    config: `${registry.mirrorsToml}\n[nri]\nsocket_path = ${JSON.stringify(socket)}\nplugin_path = ${JSON.stringify(join(dir, 'plugins'))}\nplugin_request_timeout = "60s"\n`,
  });
  const made: string[] = [];
  const plugins: TestPlugin[] = [];
  t.after(async () => {
    for (const p of plugins) p.close();
    for (const id of made) await d.runtime.removePodSandbox({ podSandboxId: id }).catch(() => {});
    await d.cleanup();
  });
  await d.images.pullImage({ image: { image: BUSYBOX } });
  let n = 0;
  const pod = async () => {
    const sandboxConfig: DeepPartial<PodSandboxConfig> = podConfig(`nri-in-flight-${n++}`);
    const { podSandboxId } = await d.runtime.runPodSandbox({ config: sandboxConfig });
    made.push(podSandboxId);
    const create = (name: string) =>
      d.runtime.createContainer({ podSandboxId, sandboxConfig, config: { metadata: { name }, image: { image: BUSYBOX }, command: ['sleep', '3600'] } });
    return { podSandboxId, create };
  };
  const connected = async (idx: string, name: string, behaviour: Parameters<typeof connectTestPlugin>[1]['onCreate'] = undefined) => {
    const plugin = await connectTestPlugin(socket, { idx, name, onCreate: behaviour });
    plugins.push(plugin);
    return plugin;
  };
  const synchronized = (fullName: string) =>
    until(
      `skiffd to synchronize plugin ${fullName}`,
      () => new RegExp(`NRI plugin connected and synchronized.* plugin=${fullName}\\b`).test(d.logs()),
      120_000,
    );

  await t.test('a plugin that connects while a container is being created hears of it before any event that names it', async () => {
    const p = await pod();
    let late: TestPlugin | undefined;
    // The first plugin holds the create until the second has connected and been configured: the
    // second's synchronization is then due while the create is in flight.
    const holder = await connected('10', 'holds-create', async () => {
      late = await connected('20', 'late');
      await until('skiffd to configure plugin 20-late', () => /plugin configured.* plugin=20-late\b/.test(d.logs()), 60_000);
      return {};
    });
    await holder.synced;
    await synchronized('10-holds-create');
    const { containerId } = await p.create('app');
    await synchronized('20-late');
    assert.ok(late);
    const synced = await late.synced;
    await d.runtime.startContainer({ containerId });
    await until('plugin 20-late to be told the container started', () =>
      late?.events.some((e) => e.event === 'POST_START_CONTAINER' && e.container === containerId),
    );
    // Every container an event names was in its snapshot or was created in its sight first.
    const known = new Set(synced.containers.map((c) => c.id));
    for (const e of late.events) {
      if (e.event === 'CREATE_CONTAINER' && e.container) known.add(e.container);
      if (e.container)
        assert.ok(
          known.has(e.container),
          `plugin 20-late was told ${e.event} of container ${e.container}, which it never heard of (events: ${JSON.stringify(late.events)}, synchronized with: ${[...known].join(', ') || 'none'})`,
        );
    }
    assert.ok(known.has(containerId), `plugin 20-late never heard of container ${containerId}`);
    assert.ok(synced.pods.some((s) => s.id === p.podSandboxId));
    assert.match(d.logs(), /NRI plugin synchronization waits for pod and container creations in flight.* plugin=20-late calls=1/);
    holder.close();
    late.close();
  });
});
