// CDI devices in a running container: the device node, its device-cgroup rule, the environment, the
// mount and the hook a spec file describes, asked for by the CRI field or by annotation; and the
// refusals a kubelet would see.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Status } from 'nice-grpc-common';
import { ContainerConfig, ContainerState } from '../../proto/gen/runtime/v1/api.ts';
import { CdiRegistry } from '../../node/skiffd/cdi/index.ts';
import { needs } from '../support/prereq.ts';
import { startRuncContainers } from '../support/runc-containers.ts';
import { until } from '../support/wait.ts';

test('CDI: a container gets the device node, its cgroup rule, the environment, the mount and the hook its spec describes', { timeout: 120_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const dir = mkdtempSync(join(tmpdir(), 'skiff-cdi-run-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const specDir = join(dir, 'cdi');
  const shared = join(dir, 'shared');
  mkdirSync(specDir);
  mkdirSync(shared);
  writeFileSync(join(shared, 'driver.txt'), 'driver files\n');
  const marker = join(dir, 'hook-ran');
  writeFileSync(
    join(specDir, 'example-gpu.yaml'),
    [
      'cdiVersion: 0.6.0',
      'kind: example.com/gpu',
      'containerEdits:',
      '  env: [EXAMPLE_DRIVER=1.0]',
      '  hooks:',
      `    - {hookName: createRuntime, path: /bin/sh, args: [sh, -c, "touch ${marker}"]}`,
      'devices:',
      '  - name: gpu0',
      '    containerEdits:',
      '      env: [EXAMPLE_GPU=0]',
      // /dev/null's numbers: harmless to write to.
      '      deviceNodes: [{path: /dev/example-gpu0, hostPath: /dev/null}]',
      `      mounts: [{hostPath: ${shared}, containerPath: /opt/example, options: [ro]}]`,
      '  - name: ctl',
      '    containerEdits:',
      // Numbers outside the runtime's default allow list: only the spec's rule lets the container open it.
      '      deviceNodes: [{path: /dev/example-ctl, type: c, major: 10, minor: 229, permissions: rw}]',
    ].join('\n'),
  );
  const { manager: m, pod } = await startRuncContainers(t, { cdi: { enabled: true, registry: new CdiRegistry([join(dir, 'none'), specDir]) } });
  const create = (name: string, over: Parameters<typeof ContainerConfig.fromPartial>[0]) =>
    m.create({
      podSandboxId: pod.id,
      config: ContainerConfig.fromPartial({ metadata: { name, attempt: 0 }, image: { image: 'busybox' }, command: ['sleep', '3600'], ...over }),
      sandboxConfig: undefined,
    });
  const run = async (id: string, script: string) => {
    const r = await m.execSync(id, ['sh', '-c', script], 30);
    return { code: r.exitCode, out: `${r.stdout}${r.stderr}`.trim() };
  };

  const id = await create('gpu', { CDIDevices: [{ name: 'example.com/gpu=gpu0' }], annotations: { 'cdi.k8s.io/example': 'example.com/gpu=ctl' } });
  await m.start(id);
  await until('the container to run', async () => (await m.status(id)).state === ContainerState.CONTAINER_RUNNING);
  assert.ok(existsSync(marker), 'the createRuntime hook ran');
  assert.equal((await run(id, 'test -c /dev/example-gpu0 && echo data > /dev/example-gpu0 && echo wrote')).out, 'wrote');
  assert.equal((await run(id, 'echo $EXAMPLE_GPU $EXAMPLE_DRIVER')).out, '0 1.0');
  assert.equal((await run(id, 'cat /opt/example/driver.txt')).out, 'driver files');
  // The cgroup lets the container open the ctl node (the driver behind it may or may not answer).
  const opened = await run(id, 'exec 3<>/dev/example-ctl && echo opened || true');
  assert.doesNotMatch(opened.out, /Operation not permitted/, opened.out);
  // The same numbers without the CDI device: the device cgroup refuses.
  const plain = await create('plain', {});
  await m.start(plain);
  await until('the plain container to run', async () => (await m.status(plain)).state === ContainerState.CONTAINER_RUNNING);
  const refused = await run(plain, 'mknod /dev/example-ctl c 10 229 && exec 3<>/dev/example-ctl');
  assert.match(refused.out, /Operation not permitted/);

  const refusedCreate = async (over: Parameters<typeof ContainerConfig.fromPartial>[0], code: Status, message: RegExp) =>
    assert.rejects(create(`bad-${Math.random().toString(36).slice(2, 8)}`, over), (err: { code: Status; details: string }) => {
      assert.equal(err.code, code, err.details);
      assert.match(err.details, message);
      return true;
    });
  await refusedCreate(
    { CDIDevices: [{ name: 'example.com/gpu=gpu7' }] },
    Status.FAILED_PRECONDITION,
    /no CDI spec on this node defines the device example\.com\/gpu=gpu7/,
  );
  await refusedCreate(
    { annotations: { 'cdi.k8s.io/x': 'gpu0' } },
    Status.INVALID_ARGUMENT,
    /config\.annotations\["cdi\.k8s\.io\/x"\]: "gpu0" is not a qualified CDI device name/,
  );
});
