// What is under way when a plugin acts. A plugin that connects while a container is being created
// never hears of it only from events: its Synchronize shows the container (or it is told of the
// create itself), so every event it gets names a container it knows. A plugin that floods the
// runtime with UpdateContainers requests gets a few carried out at a time and the rest refused with
// a clear error, rather than starting as many runtime updates at once as it sends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ContainerUpdate, LinuxMemory } from '../../proto/gen/nri/v1alpha1/api.ts';
import type { PodSandboxConfig, DeepPartial } from '../../proto/gen/runtime/v1/api.ts';
import { UNSOLICITED_CONCURRENCY } from '../../node/skiffd/nri/request-limit.ts';
import { TtrpcStatusError } from '../../node/skiffd/nri/wire/ttrpc.ts';
import { kitMissing, startKitRegistry } from '../support/cri-conformance.ts';
import { freePort } from '../support/registry.ts';
import { connectTestPlugin, type TestPlugin } from '../support/nri-test-plugin.ts';
import { podConfig } from '../support/pods.ts';
import { needs, unavailable } from '../support/prereq.ts';
import { startSkiffd } from '../support/skiffd.ts';
import { until } from '../support/wait.ts';

const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';
/** gRPC's RESOURCE_EXHAUSTED, as ttrpc carries it. */
const RESOURCE_EXHAUSTED = 8;

/** How many `runc update` processes for the containers `ids` run now, as the process table shows them. */
function runcUpdates(ids: string[]): number {
  let n = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
      if (argv.includes('update') && ids.includes(argv.at(-1) ?? '') && argv.some((a) => a.endsWith('runc'))) n++;
    } catch {
      // gone meanwhile
    }
  }
  return n;
}

test('NRI: what is in flight when a plugin connects or floods the runtime', { timeout: 600_000 }, async (t) => {
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

  await t.test('a plugin flooding UpdateContainers gets a few carried out at a time and the rest refused with a clear error', async () => {
    const plugin = await connected('30', 'flood');
    await plugin.synced;
    await synchronized('30-flood');
    // Updates of one container are made one after another anyway: several, so that more could run at once.
    const p = await pod();
    const ids: string[] = [];
    for (const name of ['a', 'b', 'c', 'd']) {
      const { containerId } = await p.create(name);
      await d.runtime.startContainer({ containerId });
      ids.push(containerId);
    }
    const containerId = ids[0];
    const update = (shares: bigint, id = containerId): ContainerUpdate[] => [
      {
        containerId: id,
        ignoreFailure: false,
        linux: {
          resources: {
            memory: undefined,
            hugepageLimits: [],
            blockioClass: undefined,
            rdtClass: undefined,
            unified: {},
            devices: [],
            pids: undefined,
            cpu: { shares: { value: shares }, quota: undefined, period: undefined, realtimeRuntime: undefined, realtimePeriod: undefined, cpus: '', mems: '' },
          },
        },
      },
    ];
    // Sent at once, each one a runtime update of one of the containers.
    const sent = 100;
    // Sampling the process table can miss some updates, never see more than run.
    let most = 0;
    let flooding = true;
    const sampling = (async () => {
      while (flooding) {
        most = Math.max(most, runcUpdates(ids));
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();
    const answers = await Promise.allSettled(Array.from({ length: sent }, (_, i) => plugin.updateContainers(update(BigInt(1000 + i), ids[i % ids.length]))));
    flooding = false;
    await sampling;
    assert.ok(most <= UNSOLICITED_CONCURRENCY, `${most} runc updates ran at once`);
    const done = answers.filter((a) => a.status === 'fulfilled');
    const refused = answers.flatMap((a) => (a.status === 'rejected' ? [a.reason as Error] : []));
    for (const a of done) assert.deepEqual(a.value, []);
    assert.ok(refused.length > 0, `all ${sent} requests were carried out: none was refused`);
    for (const err of refused) {
      assert.ok(err instanceof TtrpcStatusError, String(err));
      assert.equal(err.code, RESOURCE_EXHAUSTED, err.message);
      assert.match(
        err.message,
        /too many UpdateContainers requests from plugin "30-flood": \d+ requests in progress and \d+ waiting; wait for their answers before asking again/,
      );
    }
    assert.match(d.logs(), /refusing NRI plugin request: too many in progress.* plugin=30-flood/);
    // The plugin stays connected and is served once it waits for its answers.
    assert.deepEqual(await plugin.updateContainers(update(4242n)), []);
    const status = await d.runtime.containerStatus({ containerId });
    assert.equal(status.status?.resources?.linux?.cpuShares, 4242n);
    assert.doesNotMatch(d.logs(), /connection to plugin closed.* plugin=30-flood/);

    // Two requests at once changing different fields of one container: each merges with what the other
    // left, so neither is lost.
    const memory = 96n * 1024n * 1024n;
    const [sharesOnly] = update(0n);
    const memoryOnly: ContainerUpdate = {
      ...sharesOnly,
      linux: {
        resources: {
          ...sharesOnly.linux!.resources!,
          cpu: undefined,
          memory: { ...LinuxMemory.fromPartial({}), limit: { value: memory } },
        },
      },
    };
    for (let round = 0; round < 5; round++) {
      const shares = 700n + BigInt(round);
      await Promise.all([plugin.updateContainers(update(shares)), plugin.updateContainers([memoryOnly])]);
      const after = (await d.runtime.containerStatus({ containerId })).status?.resources?.linux;
      assert.equal(after?.cpuShares, shares, `round ${round}: the CPU shares`);
      assert.equal(after?.memoryLimitInBytes, memory, `round ${round}: the memory limit`);
    }
    plugin.close();
  });
});
