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
      // Two devices of one kind, each setting the same variable to its own value, as GPU specs do.
      // /dev/null's and /dev/zero's numbers: harmless to write to.
      ...['gpu0:/dev/null', 'gpu1:/dev/zero'].flatMap((d) => {
        const [name, host] = d.split(':');
        return [
          `  - name: ${name}`,
          '    containerEdits:',
          `      env: [EXAMPLE_GPU=${name}]`,
          `      deviceNodes: [{path: /dev/example-${name}, hostPath: ${host}}]`,
        ];
      }),
      '  - name: shared',
      '    containerEdits:',
      `      mounts: [{hostPath: ${shared}, containerPath: /opt/example, options: [ro]}]`,
      '  - name: ctl',
      '    containerEdits:',
      // Numbers outside the runtime's default allow list: only the spec's rule lets the container open it.
      '      deviceNodes: [{path: /dev/example-ctl, type: c, major: 10, minor: 229, permissions: rw}]',
      '  - name: events',
      '    containerEdits:',
      // A FIFO: made in the container; the device cgroup has no rule for it (runc would refuse one).
      '      deviceNodes: [{path: /dev/example-events, type: p}]',
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
  const started = async (name: string, over: Parameters<typeof ContainerConfig.fromPartial>[0]) => {
    const id = await create(name, over);
    await m.start(id);
    await until(`${name} to run`, async () => (await m.status(id)).state === ContainerState.CONTAINER_RUNNING);
    return id;
  };
  /** A node's type and numbers as the container sees it: "c 1:3", "p", or "missing". */
  const node = async (id: string, path: string) =>
    (await run(id, `if test -c ${path}; then stat -c 'c %t %T' ${path}; elif test -p ${path}; then echo p; else echo missing; fi`)).out.replace(
      /^c ([0-9a-f]+) ([0-9a-f]+)$/,
      (_m, major: string, minor: string) => `c ${Number.parseInt(major, 16)}:${Number.parseInt(minor, 16)}`,
    );

  await t.test("one device by the CRI field: its node, environment, mount and the spec's hook", async () => {
    const id = await started('gpu', { CDIDevices: [{ name: 'example.com/gpu=gpu0' }, { name: 'example.com/gpu=shared' }] });
    assert.ok(existsSync(marker), 'the createRuntime hook ran');
    assert.equal(await node(id, '/dev/example-gpu0'), 'c 1:3');
    assert.equal(await node(id, '/dev/example-gpu1'), 'missing', 'only the device asked for');
    assert.equal((await run(id, 'echo data > /dev/example-gpu0 && echo wrote')).out, 'wrote');
    assert.equal((await run(id, 'echo $EXAMPLE_GPU $EXAMPLE_DRIVER')).out, 'gpu0 1.0');
    assert.equal((await run(id, 'cat /opt/example/driver.txt')).out, 'driver files');
  });

  await t.test("two devices of one kind, each setting EXAMPLE_GPU: both nodes, the last one's value", async () => {
    const id = await started('pair', { CDIDevices: [{ name: 'example.com/gpu=gpu0' }, { name: 'example.com/gpu=gpu1' }] });
    assert.equal(await node(id, '/dev/example-gpu0'), 'c 1:3');
    assert.equal(await node(id, '/dev/example-gpu1'), 'c 1:5');
    assert.equal((await run(id, 'echo x > /dev/example-gpu0 && head -c 3 /dev/example-gpu1 | wc -c')).out, '3');
    assert.equal((await run(id, 'env | grep -c ^EXAMPLE_GPU= ; echo $EXAMPLE_GPU')).out, '1\ngpu1');
  });

  await t.test('by annotation: a device of its own, opened through its cgroup rule; a FIFO node with no rule', async () => {
    const id = await started('annotated', { annotations: { 'cdi.k8s.io/example': 'example.com/gpu=ctl, example.com/gpu=events' } });
    assert.equal(await node(id, '/dev/example-ctl'), 'c 10:229');
    assert.equal(await node(id, '/dev/example-events'), 'p');
    assert.equal(await node(id, '/dev/example-gpu0'), 'missing', 'only the devices the annotation names');
    // The cgroup lets the container open the ctl node (the driver behind it may or may not answer).
    const opened = await run(id, 'exec 3<>/dev/example-ctl && echo opened || true');
    assert.doesNotMatch(opened.out, /Operation not permitted/, opened.out);
    assert.equal((await run(id, 'exec 3<>/dev/example-events && echo through >&3 && head -n 1 <&3')).out, 'through');
    // The same numbers without the CDI device: the node can be made, and the device cgroup refuses to open it.
    const plain = await started('plain', {});
    const refused = await run(plain, 'mknod /dev/example-ctl c 10 229 && test -c /dev/example-ctl && echo made; exec 3<>/dev/example-ctl');
    assert.match(refused.out, /^made\n.*Operation not permitted/s);
  });

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
