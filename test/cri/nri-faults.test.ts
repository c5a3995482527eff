// Plugins that misbehave never take skiffd down: one that hangs is dropped after the request
// timeout, one that crashes or answers garbage is dropped at once, one that never registers is
// dropped after the registration timeout, each with a log line, and the pod goes on. Where the
// protocol says an event fails (a plugin refuses it, two plugins conflict), the CRI call fails with
// the plugin's message. Plugins may also update and evict containers unprompted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Status } from 'nice-grpc-common';
import { ContainerState, type PodSandboxConfig, type DeepPartial } from '../../proto/gen/runtime/v1/api.ts';
import { kitMissing, startKitRegistry } from '../support/cri-conformance.ts';
import { freePort } from '../support/registry.ts';
import { nriSamplePath, nriSamplesMissing, pluginSynchronized, runExternalPlugin, type RunningPlugin } from '../support/nri.ts';
import { connectTestPlugin } from '../support/nri-test-plugin.ts';
import { grpcCode, podConfig } from '../support/pods.ts';
import { needs, unavailable } from '../support/prereq.ts';
import { startSkiffd } from '../support/skiffd.ts';
import { until } from '../support/wait.ts';

const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';

test('NRI: misbehaving plugins are dropped, refusals and conflicts fail the call, unsolicited updates and evictions', { timeout: 600_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon', 'docker-registry', 'unshare'] })) return;
  const missing = kitMissing() ?? nriSamplesMissing();
  if (missing) return unavailable(t, missing);
  const dir = mkdtempSync(join(tmpdir(), 'skiff-nri-faults-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const socketDir = join(dir, 'nri');
  mkdirSync(socketDir);
  const socket = join(socketDir, 'nri.sock');
  const registry = await startKitRegistry(await freePort());
  t.after(() => registry.stop());
  const d = await startSkiffd({
    config: `${registry.mirrorsToml}\n[nri]\nsocket_path = ${JSON.stringify(socket)}\nplugin_path = ${JSON.stringify(join(dir, 'plugins'))}\nplugin_registration_timeout = "2s"\nplugin_request_timeout = "1s"\n`,
  });
  const made: string[] = [];
  t.after(async () => {
    for (const id of made) await d.runtime.removePodSandbox({ podSandboxId: id }).catch(() => {});
    await d.cleanup();
  });
  await d.images.pullImage({ image: { image: BUSYBOX } });

  const plugins: RunningPlugin[] = [];
  t.after(async () => {
    for (const p of plugins) await p.stop();
  });
  const sample = async (name: 'logger' | 'ulimit-adjuster', fullName: string, args: string[]) => {
    const p = runExternalPlugin(socketDir, [nriSamplePath(name), ...args]);
    plugins.push(p);
    await pluginSynchronized(p, fullName, d.logs);
    return p;
  };
  /** Waits (bounded) until skiffd has no plugin left in its invocation order. */
  const noPlugins = () => until('skiffd to have no NRI plugin', () => /plugins=\(none\)/.test(lastOrder(d.logs())), 30_000);
  const lastOrder = (logs: string) =>
    logs
      .split('\n')
      .filter((l) => l.includes('NRI plugin invocation order'))
      .at(-1) ?? '';

  let n = 0;
  const pod = async (annotations: Record<string, string> = {}) => {
    const sandboxConfig: DeepPartial<PodSandboxConfig> = podConfig(`nri-fault-${n++}`, { annotations });
    const { podSandboxId } = await d.runtime.runPodSandbox({ config: sandboxConfig });
    made.push(podSandboxId);
    const create = (name: string) =>
      d.runtime.createContainer({ podSandboxId, sandboxConfig, config: { metadata: { name }, image: { image: BUSYBOX }, command: ['sleep', '3600'] } });
    return { podSandboxId, create };
  };
  const env = async (containerId: string) => {
    await d.runtime.startContainer({ containerId });
    return (await d.runtime.execSync({ containerId, cmd: ['env'], timeout: 30n })).stdout.toString();
  };

  await t.test('a plugin that hangs is dropped after the request timeout, with a log line; the container is made without it', async () => {
    const logger = await sample('logger', '10-hangs', ['-idx', '10', '-name', 'hangs', '-add-env', 'NRI_HANG']);
    const p = await pod();
    process.kill(logger.child.pid!, 'SIGSTOP');
    try {
      const { containerId } = await p.create('app');
      assert.doesNotMatch(await env(containerId), /NRI_HANG/);
      assert.match(
        d.logs(),
        /closing plugin: it failed to handle an event.* plugin=10-hangs event=CREATE_CONTAINER err="CreateContainer: no answer within 1000 ms"/,
      );
    } finally {
      process.kill(logger.child.pid!, 'SIGCONT');
      await logger.stop();
    }
    await noPlugins();
  });

  await t.test('a plugin that crashes is dropped, with a log line; the next pod goes on', async () => {
    const logger = await sample('logger', '10-crashes', ['-idx', '10', '-name', 'crashes', '-add-env', 'NRI_CRASH']);
    logger.child.kill('SIGKILL');
    await until('skiffd to see the plugin go', () => /connection to plugin closed.* plugin=10-crashes/.test(d.logs()), 30_000);
    const { containerId } = await (await pod()).create('app');
    assert.doesNotMatch(await env(containerId), /NRI_CRASH/);
    // One that goes away in the middle of a request.
    const plugin = await connectTestPlugin(socket, {
      idx: '15',
      name: 'dies-mid-request',
      onCreate: () => {
        plugin.close();
        return {};
      },
    });
    await plugin.synced;
    await (await pod()).create('app');
    await plugin.closed;
    assert.match(d.logs(), /plugin=15-dies-mid-request/);
    await noPlugins();
  });

  await t.test('a plugin that answers garbage is dropped, with a log line; the container is made', async () => {
    const plugin = await connectTestPlugin(socket, { idx: '20', name: 'garbage', onCreate: () => ({ garbage: Buffer.from([0xff, 0xff, 0xff, 0xff]) }) });
    await plugin.synced;
    const { containerId } = await (await pod()).create('app');
    assert.ok(containerId);
    await plugin.closed;
    assert.match(d.logs(), /closing plugin.* plugin=20-garbage event=CREATE_CONTAINER err="CreateContainer: the answer does not decode/);
    // Garbage at the frame level: a header announcing more than any frame may hold.
    const raw = connect(socket);
    await new Promise<void>((resolve) => raw.once('connect', () => resolve()));
    raw.write(Buffer.from('ffffffffffffffff0000000000', 'hex'));
    await new Promise<void>((resolve) => raw.once('close', () => resolve()));
    await until('the garbage connection to be logged', () => /connection to plugin closed.*reason="frame of 4294967295 bytes/.test(d.logs()), 30_000);
    assert.ok((await d.runtime.version({})).runtimeName);
    await noPlugins();
  });

  await t.test('a plugin that never registers is dropped after the registration timeout', async () => {
    const plugin = await connectTestPlugin(socket, { idx: '25', name: 'silent', neverRegister: true });
    await plugin.closed;
    await until(
      'the registration timeout to be logged',
      () => /failed to start external NRI plugin.* err="plugin registration timed out \(2000 ms\)"/.test(d.logs()),
      30_000,
    );
  });

  await t.test('two plugins setting the same variable conflict: CreateContainer fails naming both, as containerd does', async () => {
    const a = await sample('logger', '10-logger-a', ['-idx', '10', '-name', 'logger-a', '-add-env', 'NRI_SAME']);
    const b = await sample('logger', '11-logger-b', ['-idx', '11', '-name', 'logger-b', '-add-env', 'NRI_SAME']);
    const failed = await grpcCode((await pod()).create('app'));
    assert.equal(failed.code, Status.UNKNOWN, failed.details);
    assert.match(failed.details, /plugins "11-logger-b" and "10-logger-a" both tried to set env NRI_SAME/);
    await a.stop();
    await b.stop();
    await noPlugins();
  });

  await t.test("a plugin's refusal fails CreateContainer with its message", async () => {
    const u = await sample('ulimit-adjuster', '20-ulimit-adjuster', ['-idx', '20']);
    const failed = await grpcCode((await pod({ 'ulimits.nri.containerd.io/container.app': '- type: bogus\n  hard: 1\n  soft: 1\n' })).create('app'));
    assert.equal(failed.code, Status.UNKNOWN, failed.details);
    assert.match(failed.details, /plugin "20-ulimit-adjuster" failed CreateContainer: failed to parse type: "bogus"/);
    await u.stop();
    await noPlugins();
  });

  await t.test('a plugin updates and evicts a running container unprompted', async () => {
    const plugin = await connectTestPlugin(socket, { idx: '30', name: 'rebalancer' });
    await plugin.synced;
    const { containerId } = await (await pod()).create('app');
    await d.runtime.startContainer({ containerId });
    const shares = {
      cpu: { shares: { value: 777n }, quota: undefined, period: undefined, realtimeRuntime: undefined, realtimePeriod: undefined, cpus: '', mems: '' },
    };
    const failed = await plugin.updateContainers([
      {
        containerId,
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
            ...shares,
          },
        },
      },
    ]);
    assert.deepEqual(failed, []);
    const status = await d.runtime.containerStatus({ containerId, verbose: true });
    assert.equal(status.status?.resources?.linux?.cpuShares, 777n);
    assert.equal(JSON.parse(status.info.info).runtimeSpec.linux.resources.cpu.shares, 777);
    assert.match(d.logs(), /NRI plugin updated container resources.* by="unsolicited request of plugin \\"30-rebalancer\\""/);
    await plugin.updateContainers([], [{ containerId, reason: 'node pressure (test)' }]);
    await until(
      'the evicted container to stop',
      async () => (await d.runtime.containerStatus({ containerId })).status?.state === ContainerState.CONTAINER_EXITED,
      30_000,
    );
    assert.match(d.logs(), /NRI plugin evicts container.* reason="node pressure \(test\)"/);
    plugin.close();
    await noPlugins();
  });
});
