// The field's own NRI plugins (the conformance kit's containerd/nri v0.8.0 samples: logger,
// ulimit-adjuster, device-injector) connected the way a user connects them, to containerd 2.1 and to
// skiffd side by side, with the same CRI calls made to both: the logger sees the same events in the
// same order, and the container sees the same adjustments from inside (the logger's environment
// variable, the annotated rlimits, the injected device node and bind mount).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from 'nice-grpc';
import type { RuntimeServiceDefinition, ImageServiceDefinition } from '../../proto/gen/runtime/v1/api.ts';
import { KIT_REGISTRY_HOSTS, kitMissing, startKitRegistry } from '../support/cri-conformance.ts';
import { freePort } from '../support/registry.ts';
import { loggerEvents, nriSamplePath, nriSamplesMissing, pluginSynchronized, runExternalPlugin, type RunningPlugin } from '../support/nri.ts';
import { podConfig } from '../support/pods.ts';
import { needs, unavailable } from '../support/prereq.ts';
import { startSkiffd } from '../support/skiffd.ts';

const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';
const PAUSE = 'registry.k8s.io/pause:3.9';

interface Runtime {
  name: string;
  runtime: Client<typeof RuntimeServiceDefinition>;
  images: Client<typeof ImageServiceDefinition>;
  /** The directory holding this runtime's nri.sock. */
  socketDir: string;
  logs(): string;
}

/** What the container shows of each adjustment, and what the logger saw, for one runtime. */
interface Outcome {
  env: string;
  limits: string;
  specRlimits: string;
  device: string;
  mount: string;
  mountOptions: string;
  events: ReturnType<typeof loggerEvents>;
}

async function scenario(r: Runtime, dir: string, shared: string): Promise<Outcome> {
  const logFile = join(dir, `${r.name}-logger.log`);
  const plugins: RunningPlugin[] = [];
  try {
    const logger = runExternalPlugin(r.socketDir, [nriSamplePath('logger'), '-idx', '10', '-name', 'logger', '-log-file', logFile, '-add-env', 'NRI_LOGGER']);
    plugins.push(logger);
    await pluginSynchronized(logger, '10-logger', r.logs, logFile);
    const ulimits = runExternalPlugin(r.socketDir, [nriSamplePath('ulimit-adjuster'), '-idx', '20']);
    plugins.push(ulimits);
    await pluginSynchronized(ulimits, '20-ulimit-adjuster', r.logs);
    const devices = runExternalPlugin(r.socketDir, [nriSamplePath('device-injector'), '-idx', '30']);
    plugins.push(devices);
    await pluginSynchronized(devices, '30-device-injector', r.logs);

    await r.images.pullImage({ image: { image: BUSYBOX } });
    const sandboxConfig = podConfig('nri-samples', {
      annotations: {
        'ulimits.nri.containerd.io/container.app':
          '- type: memlock\n  hard: 987654\n  soft: 645321\n- type: RLIMIT_NOFILE\n  hard: 4096\n  soft: 1024\n- type: nproc\n  hard: 9000\n',
        'devices.nri.io/container.app': '- path: /dev/nri-null\n  type: c\n  major: 1\n  minor: 3\n',
        'mounts.nri.io/container.app': `- source: ${shared}\n  destination: /nri-shared\n  type: bind\n  options:\n  - bind\n  - ro\n`,
      },
    });
    const { podSandboxId } = await r.runtime.runPodSandbox({ config: sandboxConfig });
    const { containerId } = await r.runtime.createContainer({
      podSandboxId,
      sandboxConfig,
      config: { metadata: { name: 'app' }, image: { image: BUSYBOX }, command: ['sleep', '3600'], linux: {} },
    });
    await r.runtime.startContainer({ containerId });
    const sh = async (script: string) => {
      const res = await r.runtime.execSync({ containerId, cmd: ['sh', '-c', script], timeout: 30n });
      return `${res.stdout.toString()}${res.stderr.toString()}`.trim();
    };
    const outcome = {
      // The value names the logger's pid; the name and form are what must match.
      env: (await sh('env | grep ^NRI_LOGGER=')).replace(/logger-pid-\d+/, 'logger-pid-N'),
      // runc itself (a Go program, which raises its own soft open-files limit) leaves that soft limit
      // of an exec'd process at either value; the spec's rlimits (below) show the plugin's.
      limits: await sh(
        "grep -E '^Max (locked memory|processes)' /proc/self/limits; grep '^Max open files' /proc/self/limits | awk '{print \"hard open files\", $5}'",
      ),
      specRlimits: JSON.stringify(
        JSON.parse((await r.runtime.containerStatus({ containerId, verbose: true })).info.info ?? '{}').runtimeSpec?.process?.rlimits,
      ),
      device: await sh("stat -c '%F %t:%T' /dev/nri-null"),
      mount: await sh('cat /nri-shared/marker'),
      mountOptions: await sh("grep ' /nri-shared ' /proc/self/mounts | cut -d' ' -f4 | cut -d, -f1"),
    };
    await r.runtime.updateContainerResources({ containerId, linux: { cpuShares: 512n } });
    await r.runtime.stopContainer({ containerId, timeout: 0n });
    await r.runtime.removeContainer({ containerId });
    await r.runtime.stopPodSandbox({ podSandboxId });
    await r.runtime.removePodSandbox({ podSandboxId });
    return { ...outcome, events: loggerEvents(readFileSync(logFile, 'utf8')) };
  } finally {
    for (const p of plugins) await p.stop();
  }
}

test('NRI sample plugins: the same events and adjustments on containerd 2.1 and skiffd', { timeout: 600_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon', 'docker-registry', 'unshare'] })) return;
  const missing = kitMissing() ?? nriSamplesMissing();
  if (missing) return unavailable(t, missing);
  const { containerdBinary, startContainerdPeer, CONTAINERD2_HINT } = await import('../../bench/cri/containerd-peer.ts');
  if (!containerdBinary('2.1')) return unavailable(t, `containerd 2.1 is not available: ${CONTAINERD2_HINT}`);

  const dir = mkdtempSync(join(tmpdir(), 'skiff-nri-samples-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const shared = join(dir, 'shared');
  mkdirSync(shared);
  writeFileSync(join(shared, 'marker'), 'from the host\n');
  const registry = await startKitRegistry(await freePort());
  t.after(() => registry.stop());

  const ctdNri = join(dir, 'containerd-nri');
  mkdirSync(ctdNri);
  const mirrors = Object.fromEntries(KIT_REGISTRY_HOSTS.map((h) => [h, registry.url]));
  const peer = await startContainerdPeer(join(dir, 'containerd'), `127.0.0.1:${registry.port}`, PAUSE, mirrors, '2.1', {
    nri: { socketPath: join(ctdNri, 'nri.sock'), pluginPath: join(ctdNri, 'plugins'), pluginConfigPath: join(ctdNri, 'conf.d') },
  });
  t.after(() => peer.teardown());
  const onContainerd = await scenario({ name: 'containerd', runtime: peer.runtime, images: peer.images, socketDir: ctdNri, logs: peer.logs }, dir, shared);

  const skiffNri = join(dir, 'skiffd-nri');
  mkdirSync(skiffNri);
  const d = await startSkiffd({
    config: `${registry.mirrorsToml}\n[nri]\nsocket_path = ${JSON.stringify(join(skiffNri, 'nri.sock'))}\nplugin_path = ${JSON.stringify(join(skiffNri, 'plugins'))}\n`,
  });
  t.after(() => d.cleanup());
  const onSkiffd = await scenario({ name: 'skiffd', runtime: d.runtime, images: d.images, socketDir: skiffNri, logs: d.logs }, dir, shared);

  const context = `\ncontainerd: ${JSON.stringify(onContainerd, null, 1)}\nskiffd: ${JSON.stringify(onSkiffd, null, 1)}`;
  // What each plugin did, seen from inside the container, first on its own...
  assert.match(onContainerd.env, /^NRI_LOGGER=logger-pid-N$/, context);
  assert.match(onContainerd.limits, /Max locked memory\s+645321\s+987654/, context);
  assert.match(onContainerd.limits, /hard open files 4096/, context);
  assert.match(onContainerd.specRlimits, /"RLIMIT_NOFILE","hard":4096,"soft":1024/, context);
  assert.match(onContainerd.device, /^character special file 1:3$/, context);
  assert.equal(onContainerd.mount, 'from the host', context);
  // ...then the same on skiffd.
  const { events: ctdEvents, ...ctdSeen } = onContainerd;
  const { events: skiffEvents, ...skiffSeen } = onSkiffd;
  assert.deepEqual(skiffSeen, ctdSeen, `the container sees the same adjustments${context}`);
  assert.deepEqual(
    skiffEvents.map((e) => e.event),
    ctdEvents.map((e) => e.event),
    `the logger saw the same events in the same order${context}`,
  );
  assert.deepEqual(skiffEvents, ctdEvents, `with the same pod and container names${context}`);
  assert.ok(ctdEvents.length >= 12, `the logger saw the whole lifecycle${context}`);
});
