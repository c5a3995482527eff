// CDI spec files: every version the field writes, JSON and YAML, the spec's validation rules; which
// file wins for a device; a broken file costs only its own devices; new files seen without a restart;
// and malformed specs of every kind refused with a message, never a crash.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Status } from 'nice-grpc-common';
import { ContainerConfig } from '../../proto/gen/runtime/v1/api.ts';
import { CdiRegistry, requestedDevices, resolveDevices } from '../../node/skiffd/cdi/index.ts';
import { applyCdiDevices, type CdiEditableSpec } from '../../node/skiffd/cdi/apply.ts';
import { CdiSpecError, parseQualifiedName, parseSpec, SPEC_VERSIONS } from '../../node/skiffd/cdi/spec.ts';

const gpuSpec = (version: string, extra: Record<string, unknown> = {}) => ({
  cdiVersion: version,
  kind: 'example.com/gpu',
  devices: [{ name: 'gpu0', containerEdits: { env: ['GPU=0'], deviceNodes: [{ path: '/dev/example-gpu0', type: 'c', major: 1, minor: 3 }] } }],
  containerEdits: { env: ['GPU_DRIVER=1.0'] },
  ...extra,
});

test('every spec version the field writes, as JSON and as YAML', () => {
  for (const version of SPEC_VERSIONS) {
    const json = parseSpec(JSON.stringify(gpuSpec(version)), '/etc/cdi/gpu.json');
    assert.equal(json.kind, 'example.com/gpu');
    assert.equal(json.devices[0].containerEdits.deviceNodes?.[0].major, 1);
  }
  const yaml = parseSpec(
    'cdiVersion: 0.5.0\nkind: example.com/gpu\ndevices:\n  - name: gpu0\n    containerEdits:\n      env: ["GPU=0"]\n      deviceNodes:\n        - path: /dev/example-gpu0\n          permissions: rw\n',
    '/etc/cdi/gpu.yaml',
  );
  assert.deepEqual(yaml.devices[0].containerEdits, { env: ['GPU=0'], deviceNodes: [{ path: '/dev/example-gpu0', permissions: 'rw' }] });
});

test("the spec's rules: each broken spec is refused naming the file and the field", () => {
  const refused = (doc: unknown, message: RegExp, file = '/etc/cdi/x.json') =>
    assert.throws(
      () => parseSpec(typeof doc === 'string' ? doc : JSON.stringify(doc), file),
      (err: Error) => err instanceof CdiSpecError && message.test(err.message),
    );
  refused('{', /\/etc\/cdi\/x\.json: not valid JSON/);
  refused(': : :', /x\.yaml: not valid YAML/, '/etc/cdi/x.yaml');
  refused(gpuSpec('0.2.0'), /cdiVersion: "0\.2\.0" is not a CDI version/);
  refused({ ...gpuSpec('0.6.0'), kind: 'gpu' }, /kind: the kind "gpu" is not vendor\.com\/class/);
  refused({ ...gpuSpec('0.6.0'), kind: '-bad.com/gpu' }, /"-bad\.com" is not a valid vendor name/);
  refused({ ...gpuSpec('0.6.0'), devices: [] }, /devices: a spec names at least one device/);
  refused(
    { ...gpuSpec('0.6.0'), devices: [{ name: 'bad name!', containerEdits: { env: ['A=1'] } }] },
    /devices\[0\]\.name: "bad name!" is not a valid device name/,
  );
  refused({ ...gpuSpec('0.6.0'), devices: [...gpuSpec('0.6.0').devices, ...gpuSpec('0.6.0').devices] }, /the device "gpu0" is named twice/);
  refused({ ...gpuSpec('0.6.0'), devices: [{ name: 'empty', containerEdits: {} }] }, /devices\[0\]\.containerEdits: a device must make at least one edit/);
  refused({ ...gpuSpec('0.6.0'), containerEdits: { env: ['NOVALUE'] } }, /containerEdits\.env\[0\]: "NOVALUE" is not NAME=VALUE/);
  refused({ ...gpuSpec('0.6.0'), containerEdits: { deviceNodes: [{ path: 'dev/x' }] } }, /deviceNodes\[0\]\.path: "dev\/x" is not an absolute path/);
  refused({ ...gpuSpec('0.6.0'), containerEdits: { deviceNodes: [{ path: '/dev/x', type: 'z' }] } }, /deviceNodes\[0\]\.type: "z" is not c, b, u or p/);
  refused({ ...gpuSpec('0.6.0'), containerEdits: { deviceNodes: [{ path: '/dev/x', permissions: 'rwx' }] } }, /permissions: "rwx" is not some of r, w and m/);
  refused(
    { ...gpuSpec('0.6.0'), containerEdits: { hooks: [{ hookName: 'beforeStart', path: '/bin/true' }] } },
    /hooks\[0\]\.hookName: "beforeStart" is not one of/,
  );
  refused({ ...gpuSpec('0.6.0'), containerEdits: { additionalGids: [44] } }, /additionalGids: needs cdiVersion 0\.7\.0 or later \(the file says 0\.6\.0\)/);
  refused({ ...gpuSpec('0.5.0'), annotations: { a: 'b' } }, /annotations: needs cdiVersion 0\.6\.0 or later/);
  refused({ ...gpuSpec('0.7.0'), containerEdits: { additionalGids: [0] } }, /group 0 cannot be added/);
  refused(
    { ...gpuSpec('0.7.0'), containerEdits: { mounts: [{ hostPath: '/x', containerPath: 'y' }] } },
    /mounts\[0\]\.containerPath: "y" is not an absolute path/,
  );
});

test('qualified device names', () => {
  assert.deepEqual(parseQualifiedName('example.com/gpu=gpu0'), { kind: 'example.com/gpu', device: 'gpu0' });
  assert.deepEqual(parseQualifiedName('nvidia.com/gpu=GPU-1a2b:0'), { kind: 'nvidia.com/gpu', device: 'GPU-1a2b:0' });
  for (const bad of ['gpu0', 'example.com=gpu0', 'example.com/gpu=', 'example.com/gpu=-x', 'exa mple.com/gpu=gpu0'])
    assert.equal(typeof parseQualifiedName(bad), 'string', bad);
});

test('malformed specs of every kind: a clear error or a valid spec, never a crash', () => {
  // Deterministic mutations of a valid spec: each field replaced by values of the wrong shape.
  const shapes: unknown[] = [null, 0, -1, 1.5, 2 ** 40, '', 'x', '/abs', [], [1], ['a=b'], {}, { a: 1 }, true];
  const base = {
    ...gpuSpec('0.7.0'),
    containerEdits: {
      env: ['A=1'],
      mounts: [{ hostPath: '/h', containerPath: '/c', options: ['ro'] }],
      hooks: [{ hookName: 'createContainer', path: '/bin/true', timeout: 5 }],
      additionalGids: [7],
    },
  };
  const paths: (string | number)[][] = [];
  const walk = (v: unknown, path: (string | number)[]) => {
    paths.push(path);
    if (Array.isArray(v)) for (const [i, x] of v.entries()) walk(x, [...path, i]);
    else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, [...path, k]);
  };
  walk(base, []);
  let refusedCount = 0;
  for (const path of paths.slice(1)) {
    for (const shape of shapes) {
      const doc = structuredClone(base) as Record<string | number, unknown>;
      let at = doc;
      for (const key of path.slice(0, -1)) at = at[key] as Record<string | number, unknown>;
      at[path[path.length - 1]] = shape;
      try {
        parseSpec(JSON.stringify(doc), '/etc/cdi/fuzz.json');
      } catch (err) {
        assert.ok(err instanceof CdiSpecError, `${path.join('.')} = ${JSON.stringify(shape)}: ${(err as Error).stack}`);
        assert.match(err.message, /^\/etc\/cdi\/fuzz\.json: /);
        refusedCount++;
      }
    }
  }
  assert.ok(refusedCount > paths.length, `most mutations are refused (${refusedCount} of ${paths.length * shapes.length})`);
  // Truncations of the text are refused as unreadable, not thrown as anything else.
  const text = JSON.stringify(base);
  for (let n = 0; n < text.length; n += 7) assert.throws(() => parseSpec(text.slice(0, n), '/etc/cdi/cut.json'), CdiSpecError);
});

test('the registry: a later directory wins, one directory defining a device twice refuses it, a broken file costs only its own devices, new files are seen', (t) => {
  const root = mkdtempSync(join(tmpdir(), 'skiff-cdi-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const etc = join(root, 'etc');
  const run = join(root, 'run');
  mkdirSync(etc);
  mkdirSync(run);
  const write = (file: string, doc: unknown) => writeFileSync(file, typeof doc === 'string' ? doc : JSON.stringify(doc));
  const registry = new CdiRegistry([etc, run]);
  const policy = { enabled: true, registry };
  const ask = (...names: string[]) => ContainerConfig.fromPartial({ CDIDevices: names.map((name) => ({ name })) });

  write(join(etc, 'gpu.json'), gpuSpec('0.6.0'));
  write(join(etc, 'broken.yaml'), 'cdiVersion: 0.6.0\nkind: other.com/nic\ndevices: [ {');
  assert.equal(resolveDevices(ask('example.com/gpu=gpu0'), policy)[0].file, join(etc, 'gpu.json'), 'a broken file of another vendor changes nothing');

  // /var/run/cdi (later) overrides /etc/cdi for the same device.
  write(join(run, 'gpu.json'), { ...gpuSpec('0.6.0'), containerEdits: { env: ['GPU_DRIVER=2.0'] } });
  const found = resolveDevices(ask('example.com/gpu=gpu0'), policy)[0];
  assert.equal(found.file, join(run, 'gpu.json'), 'seen without a restart, and it wins');

  // Two files of one directory: the device is ambiguous.
  write(join(run, 'gpu-again.json'), gpuSpec('0.6.0'));
  assert.throws(
    () => resolveDevices(ask('example.com/gpu=gpu0'), policy),
    (err: { code: Status; details: string }) =>
      err.code === Status.FAILED_PRECONDITION &&
      /defined in both .*gpu-again\.json and .*gpu\.json|defined in both .*gpu\.json and .*gpu-again\.json/.test(err.details),
  );
  rmSync(join(run, 'gpu-again.json'));

  assert.throws(
    () => resolveDevices(ask('example.com/gpu=gpu9'), policy),
    (err: { code: Status; details: string }) =>
      err.code === Status.FAILED_PRECONDITION &&
      /config\.CDI_devices\[0\]\.name: no CDI spec on this node defines the device example\.com\/gpu=gpu9/.test(err.details) &&
      /broken\.yaml: not valid YAML/.test(err.details),
  );
  assert.throws(
    () => resolveDevices(ask('gpu9'), policy),
    (err: { code: Status; details: string }) =>
      err.code === Status.INVALID_ARGUMENT && /config\.CDI_devices\[0\]\.name: "gpu9" is not a qualified CDI device name/.test(err.details),
  );
  assert.throws(
    () => resolveDevices(ask('example.com/gpu=gpu0'), { enabled: false, registry }),
    (err: { code: Status; details: string }) =>
      err.code === Status.FAILED_PRECONDITION && /CDI is off on this node \(\[cdi\] enable = false\)/.test(err.details),
  );
});

test('both request forms: the CDI_devices field, then cdi.k8s.io/ annotations, each device once', () => {
  const config = ContainerConfig.fromPartial({
    CDIDevices: [{ name: 'example.com/gpu=gpu0' }],
    annotations: { 'cdi.k8s.io/device-plugin_example.com-gpu': 'example.com/gpu=gpu1, example.com/gpu=gpu0', other: 'x' },
  });
  assert.deepEqual(
    requestedDevices(config).map((d) => d.name),
    ['example.com/gpu=gpu0', 'example.com/gpu=gpu1'],
  );
});

test("applying devices: edits in order, a node's numbers from the host, the cgroup allow rule, repeats as the reference library takes them", () => {
  const spec = (): CdiEditableSpec => ({
    ociVersion: '1.0.2',
    process: { user: { uid: 0, gid: 0, additionalGids: [1] }, args: ['sh'], env: ['PATH=/bin', 'GPU_DRIVER=old'], cwd: '/' },
    root: { path: '/rootfs' },
    mounts: [{ destination: '/proc', type: 'proc', source: 'proc' }],
    linux: { namespaces: [], resources: { devices: [{ allow: false, access: 'rwm' }] } },
  });
  const doc = parseSpec(
    JSON.stringify({
      cdiVersion: '0.7.0',
      kind: 'example.com/gpu',
      containerEdits: { env: ['GPU_DRIVER=1.0'], hooks: [{ hookName: 'createContainer', path: '/usr/bin/true', args: ['true', 'x'], timeout: 5 }] },
      devices: [
        {
          name: 'gpu0',
          containerEdits: {
            env: ['GPU=0'],
            deviceNodes: [{ path: '/dev/example-gpu0', hostPath: '/dev/null', permissions: 'rw' }],
            mounts: [{ hostPath: '/usr/share', containerPath: '/opt/gpu', options: ['ro'] }],
            additionalGids: [44],
          },
        },
        { name: 'gpu1', containerEdits: { env: ['GPU=1'] } },
        { name: 'other-node', containerEdits: { deviceNodes: [{ path: '/dev/example-gpu0', type: 'c', major: 1, minor: 5 }] } },
        { name: 'fifo', containerEdits: { deviceNodes: [{ path: '/dev/example-events', type: 'p' }] } },
        { name: 'sealed', containerEdits: { deviceNodes: [{ path: '/dev/example-sealed', type: 'c', major: 1, minor: 7, permissions: 'none' }] } },
      ],
    }),
    '/etc/cdi/gpu.json',
  );
  const found = (name: string) => ({
    name: `example.com/gpu=${name}`,
    spec: doc,
    device: doc.devices.find((d) => d.name === name)!,
    file: '/etc/cdi/gpu.json',
  });
  const s = spec();
  applyCdiDevices(s, [found('gpu0')]);
  assert.deepEqual(s.process.env, ['PATH=/bin', 'GPU_DRIVER=1.0', 'GPU=0']);
  assert.deepEqual(s.linux.devices, [{ type: 'c', path: '/dev/example-gpu0', major: 1, minor: 3 }], "/dev/null's numbers, read from the host");
  assert.deepEqual(s.linux.resources?.devices?.at(-1), { allow: true, type: 'c', major: 1, minor: 3, access: 'rw' });
  assert.deepEqual(s.mounts.at(-1), { destination: '/opt/gpu', source: '/usr/share', type: 'bind', options: ['rbind', 'ro'] });
  assert.deepEqual(s.hooks, { createContainer: [{ path: '/usr/bin/true', args: ['true', 'x'], timeout: 5 }] });
  assert.deepEqual(s.process.user.additionalGids, [1, 44]);
  // Two devices of one kind, each setting the variable: the last one's value, where the first stood;
  // the spec's own edits once.
  const two = spec();
  applyCdiDevices(two, [found('gpu0'), found('gpu1')]);
  assert.deepEqual(two.process.env, ['PATH=/bin', 'GPU_DRIVER=1.0', 'GPU=1']);
  assert.equal(two.hooks?.createContainer?.length, 1);
  // A node at a path already taken replaces it; both devices' rules stay, as the reference library leaves them.
  const replaced = spec();
  applyCdiDevices(replaced, [found('gpu0'), found('other-node')]);
  assert.deepEqual(replaced.linux.devices, [{ type: 'c', path: '/dev/example-gpu0', major: 1, minor: 5 }]);
  assert.deepEqual(
    replaced.linux.resources?.devices?.slice(1).map((r) => `${r.type} ${r.major}:${r.minor}`),
    ['c 1:3', 'c 1:5'],
  );
  // A FIFO is made in the container but gets no device cgroup rule (runc knows a, b and c); "none" gets none either.
  const fifo = spec();
  applyCdiDevices(fifo, [found('fifo'), found('sealed')]);
  assert.deepEqual(
    fifo.linux.devices?.map((d) => `${d.type} ${d.path}`),
    ['p /dev/example-events', 'c /dev/example-sealed'],
  );
  assert.deepEqual(fifo.linux.resources?.devices, [{ allow: false, access: 'rwm' }]);
  const missing = parseSpec(
    JSON.stringify({
      cdiVersion: '0.6.0',
      kind: 'example.com/gpu',
      devices: [{ name: 'ghost', containerEdits: { deviceNodes: [{ path: '/dev/no-such-node' }] } }],
    }),
    '/etc/cdi/ghost.json',
  );
  assert.throws(
    () => applyCdiDevices(spec(), [{ name: 'example.com/gpu=ghost', spec: missing, device: missing.devices[0], file: '/etc/cdi/ghost.json' }]),
    /example\.com\/gpu=ghost \(\/etc\/cdi\/ghost\.json\): the device node \/dev\/no-such-node gives no numbers and the host's \/dev\/no-such-node cannot be read: ENOENT/,
  );
});
