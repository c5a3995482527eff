// skiffd over its real socket with a real gRPC client: Version, Status conditions, RuntimeConfig,
// UpdateRuntimeConfig, and every RPC that is not built yet answering UNIMPLEMENTED with a reason.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClientError, Status } from 'nice-grpc';
import { grpcError } from '../support/grpc.ts';
import { CgroupDriver, RuntimeServiceDefinition } from '../../proto/gen/runtime/v1/api.ts';
import { needs } from '../support/prereq.ts';
import { systemdBooted } from '../../node/skiffd/cgroups/driver.ts';
import { startSkiffd, type RuntimeClient, removeDaemonDir } from '../support/skiffd.ts';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));

async function conditions(runtime: RuntimeClient) {
  const res = await runtime.status({});
  return Object.fromEntries(res.status!.conditions.map((c) => [c.type, c]));
}

test('skiffd answers the runtime RPCs that exist today', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skiffd-rpc-'));
  t.after(() => removeDaemonDir(dir));
  const cniConf = join(dir, 'cni');
  mkdirSync(cniConf);
  const config = [
    '[cni]',
    `conf_dir = ${JSON.stringify(cniConf)}`,
    'bin_dir = ["/nonexistent/cni", "/usr/lib/cni"]',
    '[registry.configs."registry.example:5000"]',
    'username = "u"',
    'password = "hunter2"',
  ].join('\n');
  const d = await startSkiffd({ dir, config });
  t.after(() => d.cleanup());

  await t.test('Version names skiffd, its package version and CRI v1', async () => {
    const v = await d.runtime.version({ version: '0.1.0' });
    assert.deepEqual(v, { version: '0.1.0', runtimeName: 'skiffd', runtimeVersion: pkg.version, runtimeApiVersion: 'v1' });
  });

  await t.test('RuntimeConfig reports the cgroupfs driver by default', async () => {
    assert.equal((await d.runtime.runtimeConfig({})).linux?.cgroupDriver, CgroupDriver.CGROUPFS);
  });

  await t.test('Status: RuntimeReady follows runc and conmon', async (t) => {
    if (!needs(t, { commands: ['runc', 'conmon'] })) return;
    const c = await conditions(d.runtime);
    assert.equal(c.RuntimeReady.status, true, JSON.stringify(c.RuntimeReady));
  });

  await t.test('Status: NetworkReady follows the CNI config dir and plugins', async (t) => {
    if (!needs(t, { commands: ['/usr/lib/cni/bridge', '/usr/lib/cni/host-local', '/usr/lib/cni/loopback'] })) return;
    // Start from an empty config dir (a subsystem may have written a default network at startup).
    for (const f of readdirSync(cniConf)) rmSync(join(cniConf, f));
    let c = await conditions(d.runtime);
    assert.equal(c.NetworkReady.status, false, JSON.stringify(c.NetworkReady));
    assert.equal(c.NetworkReady.reason, 'NetworkPluginNotReady');
    assert.match(c.NetworkReady.message, new RegExp(`no valid CNI network config in ${cniConf}`));

    const network = (plugins: object[]) => JSON.stringify({ cniVersion: '1.0.0', name: 'skiff-test', plugins });
    const bridge = { type: 'bridge', bridge: 'skifftest0', ipam: { type: 'host-local', ranges: [[{ subnet: '10.99.0.0/16' }]] } };
    writeFileSync(join(cniConf, '10-test.conflist'), network([bridge, { type: 'no-such-plugin' }]));
    c = await conditions(d.runtime);
    assert.equal(c.NetworkReady.status, false);
    assert.match(c.NetworkReady.message, /"no-such-plugin"/);
    assert.doesNotMatch(c.NetworkReady.message, /"bridge"/);

    // Broken files are skipped; the first valid one in lexical order wins, as in libcni.
    writeFileSync(join(cniConf, '05-broken.conflist'), '{ not json');
    writeFileSync(join(cniConf, '10-test.conflist'), network([bridge, { type: 'loopback' }]));
    c = await conditions(d.runtime);
    assert.equal(c.NetworkReady.status, true, JSON.stringify(c.NetworkReady));
  });

  await t.test('Status verbose carries the effective config with secrets redacted', async () => {
    const res = await d.runtime.status({ verbose: true });
    const cfg = JSON.parse(res.info.config);
    assert.equal(cfg.root, d.root);
    assert.equal(cfg.state, d.state);
    assert.equal(cfg.socketPath, d.socket);
    assert.deepEqual(cfg.cni.binDirs, ['/nonexistent/cni', '/usr/lib/cni']);
    assert.equal(cfg.registry.configs['registry.example:5000'].username, 'u');
    assert.equal(cfg.registry.configs['registry.example:5000'].password, '<redacted>');
    assert.doesNotMatch(JSON.stringify(res.info), /hunter2/);
    assert.deepEqual(await d.runtime.status({}).then((r) => r.info), {}, 'non-verbose Status has no info');
  });

  await t.test('UpdateRuntimeConfig records the pod CIDR and rejects garbage', async () => {
    await d.runtime.updateRuntimeConfig({ runtimeConfig: { networkConfig: { podCidr: '10.88.0.0/16,fd00:10::/64' } } });
    const info = JSON.parse((await d.runtime.status({ verbose: true })).info.network);
    assert.equal(info.podCidr, '10.88.0.0/16,fd00:10::/64');
    assert.deepEqual(JSON.parse(readFileSync(join(d.state, 'runtime-config.json'), 'utf8')), { podCidr: '10.88.0.0/16,fd00:10::/64' });
    const err = await grpcError(d.runtime.updateRuntimeConfig({ runtimeConfig: { networkConfig: { podCidr: '10.88.0.0/99' } } }));
    assert.equal(err.code, Status.INVALID_ARGUMENT);
    assert.match(err.details, /pod_cidr "10\.88\.0\.0\/99"/);
  });

  await t.test('every runtime RPC answers with a gRPC status; unsupported ones say what and why, with no internal history', async () => {
    for (const [key, method] of Object.entries(RuntimeServiceDefinition.methods)) {
      const fn = (d.runtime as unknown as Record<string, (req: object, opts?: object) => unknown>)[key].bind(d.runtime);
      let error: ClientError | undefined;
      try {
        if (method.responseStream) {
          // Bounded: an implemented event stream would otherwise never end.
          const signal = AbortSignal.timeout(1000);
          for await (const _ of fn({}, { signal }) as AsyncIterable<unknown>) break;
        } else {
          await fn({});
        }
      } catch (err) {
        if (err instanceof ClientError) error = err;
        else if (!(err instanceof Error && err.name === 'AbortError')) throw err;
      }
      if (!error) continue;
      assert.notEqual(error.code, Status.UNKNOWN, `${method.name}: ${error.details}`);
      assert.notEqual(error.code, Status.INTERNAL, `${method.name}: ${error.details}`);
      if (error.code === Status.UNIMPLEMENTED) {
        assert.match(error.details, new RegExp(`^${method.name} is not supported by skiffd: .{20,}`), `${method.name}: ${error.details}`);
        assert.doesNotMatch(error.details, /\bissue\b|not implemented yet/i, `${method.name}: ${error.details}`);
      }
    }
    // Still alive after all of that.
    assert.equal((await d.runtime.version({})).runtimeName, 'skiffd');
  });

  await t.test('CheckpointContainer names what is wrong: an unknown container, a relative location', async () => {
    const missing = await grpcError(d.runtime.checkpointContainer({ containerId: 'f'.repeat(64), location: '/tmp/x.tar' }));
    assert.equal(missing.code, Status.NOT_FOUND);
    const relative = await grpcError(d.runtime.checkpointContainer({ containerId: 'f'.repeat(64), location: 'x.tar' }));
    assert.equal(relative.code, Status.INVALID_ARGUMENT);
    assert.match(relative.details, /location/);
  });

  await t.test('Stop and Remove of an unknown container or pod succeed, as the CRI requires (they are idempotent)', async () => {
    // The kubelet retries a stop or removal whose answer it missed; a NotFound there would fail its pod sync.
    const unknown = randomUUID();
    await d.runtime.stopContainer({ containerId: unknown, timeout: 0n });
    await d.runtime.stopContainer({ containerId: 'e'.repeat(64), timeout: 10n });
    await d.runtime.removeContainer({ containerId: unknown });
    await d.runtime.stopPodSandbox({ podSandboxId: unknown });
    await d.runtime.removePodSandbox({ podSandboxId: unknown });
    // An empty id is still bad input, not an unknown container.
    for (const call of [
      d.runtime.stopContainer({ containerId: '' }),
      d.runtime.removeContainer({ containerId: '' }),
      d.runtime.stopPodSandbox({ podSandboxId: '' }),
    ]) {
      assert.equal((await grpcError(call)).code, Status.INVALID_ARGUMENT);
    }
  });

  await t.test('an exception inside a handler becomes a logged gRPC error, not a crash', async () => {
    // The pod CIDR file's path is taken by a directory, so the atomic rename inside the handler throws.
    rmSync(join(d.state, 'runtime-config.json'));
    mkdirSync(join(d.state, 'runtime-config.json'));
    const err = await grpcError(d.runtime.updateRuntimeConfig({ runtimeConfig: { networkConfig: { podCidr: '10.77.0.0/16' } } }));
    assert.equal(err.code, Status.INTERNAL);
    assert.match(err.details, /UpdateRuntimeConfig/);
    assert.match(d.logs(), /level=error msg="rpc handler failed" method=\/runtime\.v1\.RuntimeService\/UpdateRuntimeConfig/);
    assert.equal((await d.runtime.version({})).runtimeName, 'skiffd');
    rmSync(join(d.state, 'runtime-config.json'), { recursive: true });
  });

  const exit = await d.stop();
  assert.deepEqual(exit, { code: 0, signal: null });
  assert.doesNotMatch(d.logs(), /level=debug/, 'the default level is info');
  assert.match(d.logs(), /^time=\S+ level=info msg=serving socket=/m);

  await t.test('a restarted daemon keeps the pod CIDR and honours runtime_path', async () => {
    writeFileSync(join(d.state, 'runtime-config.json'), JSON.stringify({ podCidr: '10.66.0.0/16' }));
    const again = await startSkiffd({
      dir,
      config: '[runtime]\ncgroup_driver = "cgroupfs"\nruntime_path = "/nonexistent/bin/runc"\n',
      args: ['--log-level', 'debug'],
    });
    t.after(() => again.cleanup());
    assert.equal((await again.runtime.runtimeConfig({})).linux?.cgroupDriver, CgroupDriver.CGROUPFS);
    assert.equal(JSON.parse((await again.runtime.status({ verbose: true })).info.network).podCidr, '10.66.0.0/16');
    const c = await conditions(again.runtime);
    assert.equal(c.RuntimeReady.status, false);
    assert.equal(c.RuntimeReady.reason, 'RuntimeBinaryNotFound');
    assert.match(c.RuntimeReady.message, /"\/nonexistent\/bin\/runc"/);
    assert.ok(existsSync(again.socket));
    assert.match(again.logs(), /level=debug msg=rpc method=\/runtime\.v1\.RuntimeService\/RuntimeConfig ms=/);
    await again.stop();
  });

  await t.test('cgroup_driver = "systemd": reported to the kubelet where systemd is PID 1, refused at start-up where it is not', async () => {
    const config = '[runtime]\ncgroup_driver = "systemd"\n';
    if (systemdBooted()) {
      const sd = await startSkiffd({ dir, config });
      t.after(() => sd.cleanup());
      assert.equal((await sd.runtime.runtimeConfig({})).linux?.cgroupDriver, CgroupDriver.SYSTEMD);
      return;
    }
    // Refused before the socket listens, with what to change; a daemon that served would fail every container.
    await assert.rejects(
      startSkiffd({ dir, config, startTimeoutMs: 30_000 }),
      /startup failed.*cgroup_driver = \\?"systemd\\?" needs systemd as PID 1.*cgroup_driver = \\?"cgroupfs\\?"/s,
    );
  });
});
