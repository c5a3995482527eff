// CreateContainer adjustments of the resources the other NRI tests leave out, from a plugin of our own:
// the pids limit and CDI devices, checked in the spec skiffd hands runc and inside the running container
// (its cgroup, its device node, the CDI spec's environment); hugepage limits, cgroup v2 unified
// settings and the RDT class in the spec; an unknown CDI device and a cgroups path with ".." refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kitMissing, startKitRegistry } from '../support/cri-conformance.ts';
import { freePort } from '../support/registry.ts';
import { connectTestPlugin } from '../support/nri-test-plugin.ts';
import { podConfig } from '../support/pods.ts';
import { needs, unavailable } from '../support/prereq.ts';
import { startSkiffd } from '../support/skiffd.ts';

const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';

interface Spec {
  process: { env: string[] };
  linux: {
    devices?: { path: string; type: string; major: number; minor: number }[];
    resources?: {
      pids?: { limit: number };
      hugepageLimits?: { pageSize: string; limit: number }[];
      unified?: Record<string, string>;
      devices?: { allow: boolean; type?: string; major?: number; minor?: number; access?: string }[];
    };
    intelRdt?: { closID?: string };
  };
}

test('NRI: a plugin sets the pids limit and CDI devices, hugepage limits, unified cgroup settings and the RDT class', { timeout: 300_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon', 'docker-registry'] })) return;
  const missing = kitMissing();
  if (missing) return unavailable(t, missing);
  const dir = mkdtempSync(join(tmpdir(), 'skiff-nri-resources-'));
  chmodSync(dir, 0o711);
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const cdi = join(dir, 'cdi');
  mkdirSync(cdi);
  // /dev/null's numbers: harmless to write to, and outside no default rule a test could lean on by mistake.
  writeFileSync(
    join(cdi, 'example.yaml'),
    [
      'cdiVersion: 0.6.0',
      'kind: example.com/dev',
      'devices:',
      '  - name: null0',
      '    containerEdits:',
      '      env: [EXAMPLE_DEV=null0]',
      '      deviceNodes: [{path: /dev/example-null, hostPath: /dev/null}]',
    ].join('\n'),
  );
  const socket = join(dir, 'nri', 'nri.sock');
  const registry = await startKitRegistry(await freePort());
  t.after(() => registry.stop());
  const d = await startSkiffd({
    config: [
      registry.mirrorsToml,
      `[cdi]\nspec_dirs = ${JSON.stringify([cdi])}`,
      `[nri]\nsocket_path = ${JSON.stringify(socket)}\nplugin_path = ${JSON.stringify(join(dir, 'plugins'))}`,
    ].join('\n'),
  });
  const made: string[] = [];
  t.after(async () => {
    for (const id of made) await d.runtime.removePodSandbox({ podSandboxId: id }).catch(() => {});
    await d.cleanup();
  });
  await d.images.pullImage({ image: { image: BUSYBOX } });

  const plugin = await connectTestPlugin(socket, {
    idx: '40',
    name: 'resources',
    onCreate: (_pod, container) => {
      if (container.name === 'limited') return { adjust: { CDIDevices: [{ name: 'example.com/dev=null0' }], linux: { resources: { pids: { limit: 77n } } } } };
      if (container.name === 'unknown-device') return { adjust: { CDIDevices: [{ name: 'example.com/dev=nope' }] } };
      if (container.name === 'escape') return { adjust: { linux: { cgroupsPath: '/../../../tmp/planted' } } };
      if (container.name === 'spec-only')
        return {
          adjust: {
            linux: {
              resources: {
                hugepageLimits: [{ pageSize: '2MB', limit: 4_194_304n }],
                unified: { 'memory.high': '123456789' },
                rdtClass: { value: 'gold' },
              },
            },
          },
        };
      return {};
    },
  });
  t.after(() => plugin.close());
  await plugin.synced;

  const sandboxConfig = podConfig('nri-resources');
  const { podSandboxId } = await d.runtime.runPodSandbox({ config: sandboxConfig });
  made.push(podSandboxId);
  const create = (name: string) =>
    d.runtime.createContainer({ podSandboxId, sandboxConfig, config: { metadata: { name }, image: { image: BUSYBOX }, command: ['sleep', '3600'] } });
  const specOf = async (containerId: string) =>
    JSON.parse((await d.runtime.containerStatus({ containerId, verbose: true })).info.info ?? '{}').runtimeSpec as Spec;

  const { containerId } = await create('limited');
  const spec = await specOf(containerId);
  const context = `\nspec: ${JSON.stringify(spec.linux, null, 1)}`;
  assert.equal(spec.linux.resources?.pids?.limit, 77, context);
  assert.ok(spec.process.env.includes('EXAMPLE_DEV=null0'), context);
  assert.ok(
    spec.linux.devices?.some((x) => x.path === '/dev/example-null' && x.type === 'c' && x.major === 1 && x.minor === 3),
    context,
  );
  assert.ok(
    spec.linux.resources?.devices?.some((r) => r.allow && r.type === 'c' && r.major === 1 && r.minor === 3 && r.access === 'rwm'),
    `the device's cgroup rule${context}`,
  );
  await d.runtime.startContainer({ containerId });
  const sh = async (script: string) => {
    const res = await d.runtime.execSync({ containerId, cmd: ['sh', '-c', script], timeout: 30n });
    return `${res.stdout.toString()}${res.stderr.toString()}`.trim();
  };
  // runc mounts the container's own cgroup at /sys/fs/cgroup: v1 (this kind of host) or v2.
  assert.equal(await sh('cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max'), '77');
  assert.equal(await sh('echo $EXAMPLE_DEV; stat -c "%t:%T" /dev/example-null; echo x > /dev/example-null && echo written'), 'null0\n1:3\nwritten');

  // An unknown device fails the create and names it; the pod goes on.
  await assert.rejects(create('unknown-device'), (e: Error) => {
    assert.match(e.message, /example\.com\/dev=nope/);
    return true;
  });

  // A cgroups path that climbs out of the hierarchy (skiffd reads the container's stats there) is refused.
  await assert.rejects(create('escape'), (e: Error) => {
    assert.match(e.message, /cgroups path "\/\.\.\/\.\.\/\.\.\/tmp\/planted" is neither an absolute path without/);
    return true;
  });

  // Hugepages, unified settings and RDT classes need a hugetlb controller, cgroup v2 and resctrl, which
  // a test host may lack: their place in the spec is what is checked (the container is never started).
  const { containerId: specOnly } = await create('spec-only');
  const s = await specOf(specOnly);
  assert.deepEqual(s.linux.resources?.hugepageLimits, [{ pageSize: '2MB', limit: 4_194_304 }]);
  assert.equal(s.linux.resources?.unified?.['memory.high'], '123456789');
  assert.equal(s.linux.intelRdt?.closID, 'gold');
});
