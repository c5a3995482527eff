// CreateContainer adjustments the sample plugins never make, from a plugin of our own: annotations,
// OCI hooks, CPU shares and quota and the memory limit, the OOM score adjustment, and removal markers
// ("-key") for an annotation the runtime set and a variable and a mount the CRI config asked for. Each is checked in the
// spec skiffd hands runc and where the container meets it: its environment and mounts, its cgroup,
// /proc, the hooks' own output on the host.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kitMissing, startKitRegistry } from '../support/cri-conformance.ts';
import { freePort } from '../support/registry.ts';
import { connectTestPlugin } from '../support/nri-test-plugin.ts';
import { podConfig } from '../support/pods.ts';
import { needs, unavailable } from '../support/prereq.ts';
import { startSkiffd } from '../support/skiffd.ts';
import { until } from '../support/wait.ts';

const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';
const MEMORY_LIMIT = 160 * 1024 * 1024 + 4096;

interface Spec {
  annotations?: Record<string, string>;
  process: { env: string[]; oomScoreAdj?: number };
  mounts: { destination: string }[];
  hooks?: Record<string, { path: string; args?: string[] }[]>;
  linux: { resources?: { cpu?: { shares?: number; quota?: number; period?: number }; memory?: { limit?: number; swap?: number } } };
}

test('NRI: a plugin adjusts annotations, hooks, CPU and memory, the OOM score, and removes what the CRI config set', { timeout: 300_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon', 'docker-registry'] })) return;
  const missing = kitMissing();
  if (missing) return unavailable(t, missing);
  const dir = mkdtempSync(join(tmpdir(), 'skiff-nri-adjust-'));
  chmodSync(dir, 0o711);
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const socket = join(dir, 'nri', 'nri.sock');
  const registry = await startKitRegistry(await freePort());
  t.after(() => registry.stop());
  const d = await startSkiffd({
    config: `${registry.mirrorsToml}\n[nri]\nsocket_path = ${JSON.stringify(socket)}\nplugin_path = ${JSON.stringify(join(dir, 'plugins'))}\n`,
  });
  const made: string[] = [];
  t.after(async () => {
    for (const id of made) await d.runtime.removePodSandbox({ podSandboxId: id }).catch(() => {});
    await d.cleanup();
  });
  await d.images.pullImage({ image: { image: BUSYBOX } });

  // Hooks run on the host, with the container's state on stdin: each keeps it in a file of its own.
  const hookOut = join(dir, 'hooks');
  mkdirSync(hookOut);
  const hook = (name: string) => ({ path: '/bin/sh', args: ['sh', '-c', `cat > ${join(hookOut, name)}.json`] });
  const removedMount = join(dir, 'removed-mount');
  mkdirSync(removedMount);
  writeFileSync(join(removedMount, 'marker'), 'should not be seen\n');

  const plugin = await connectTestPlugin(socket, {
    idx: '40',
    name: 'adjuster',
    onCreate: (_pod, container) =>
      container.name === 'app'
        ? {
            adjust: {
              annotations: { 'nri.test/added': 'by the plugin', '-io.kubernetes.cri.image-name': '' },
              env: [
                { key: 'NRI_ADDED', value: 'yes' },
                { key: '-NRI_REMOVED', value: '' },
              ],
              mounts: [{ destination: '-/removed-mount' }],
              hooks: { createRuntime: [hook('create-runtime')], poststop: [hook('poststop')] },
              linux: {
                resources: {
                  cpu: { shares: { value: 333n }, quota: { value: 23456n }, period: { value: 100000n } },
                  memory: { limit: { value: BigInt(MEMORY_LIMIT) } },
                },
                oomScoreAdj: { value: 987n },
              },
            },
          }
        : {},
  });
  t.after(() => plugin.close());
  await plugin.synced;

  const sandboxConfig = podConfig('nri-adjust');
  const { podSandboxId } = await d.runtime.runPodSandbox({ config: sandboxConfig });
  made.push(podSandboxId);
  const { containerId } = await d.runtime.createContainer({
    podSandboxId,
    sandboxConfig,
    config: {
      metadata: { name: 'app' },
      image: { image: BUSYBOX },
      command: ['sleep', '3600'],
      envs: [
        { key: 'NRI_REMOVED', value: Buffer.from('from the CRI config') },
        { key: 'NRI_KEPT', value: Buffer.from('from the CRI config') },
      ],
      mounts: [{ hostPath: removedMount, containerPath: '/removed-mount', readonly: true }],
      linux: { resources: { cpuShares: 1024n, cpuQuota: 50000n, cpuPeriod: 100000n, memoryLimitInBytes: 256n * 1024n * 1024n, oomScoreAdj: 100n } },
    },
  });
  const status = await d.runtime.containerStatus({ containerId, verbose: true });
  const spec = JSON.parse(status.info.info ?? '{}').runtimeSpec as Spec;
  const context = `\nspec: ${JSON.stringify(spec, null, 1)}`;
  // In the spec: what the plugin set, over what the CRI config asked for...
  assert.equal(spec.annotations?.['nri.test/added'], 'by the plugin', context);
  // The runtime's own annotations: one removed, the others kept.
  assert.equal(spec.annotations?.['io.kubernetes.cri.image-name'], undefined, context);
  assert.equal(spec.annotations?.['io.kubernetes.cri.container-name'], 'app', context);
  assert.deepEqual(spec.linux.resources?.cpu && { ...spec.linux.resources.cpu }, { shares: 333, quota: 23456, period: 100000 }, context);
  // ...the swap limit following the memory limit, as containerd sets it.
  assert.equal(spec.linux.resources?.memory?.limit, MEMORY_LIMIT, context);
  assert.equal(spec.linux.resources?.memory?.swap, MEMORY_LIMIT, context);
  assert.equal(spec.process.oomScoreAdj, 987, context);
  assert.deepEqual(spec.hooks?.createRuntime?.at(-1), hook('create-runtime'), context);
  assert.deepEqual(spec.hooks?.poststop?.at(-1), hook('poststop'), context);
  assert.ok(!spec.mounts.some((m) => m.destination === '/removed-mount'), context);

  // Where the container meets them.
  await d.runtime.startContainer({ containerId });
  const sh = async (script: string) => {
    const res = await d.runtime.execSync({ containerId, cmd: ['sh', '-c', script], timeout: 30n });
    return `${res.stdout.toString()}${res.stderr.toString()}`.trim();
  };
  assert.deepEqual((await sh('env | grep ^NRI_ | sort')).split('\n'), ['NRI_ADDED=yes', 'NRI_KEPT=from the CRI config']);
  assert.equal(await sh('test -e /removed-mount/marker && echo present || echo absent'), 'absent');
  assert.equal(await sh('cat /proc/1/oom_score_adj'), '987');
  // runc mounts the container's own cgroup at /sys/fs/cgroup: v1 (this kind of host) or v2.
  const cgroup = await sh(
    'if [ -f /sys/fs/cgroup/cgroup.controllers ]; then echo v2 $(cat /sys/fs/cgroup/cpu.max) $(cat /sys/fs/cgroup/memory.max); ' +
      'else echo v1 $(cat /sys/fs/cgroup/cpu/cpu.shares /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us /sys/fs/cgroup/memory/memory.limit_in_bytes); fi',
  );
  assert.ok(
    cgroup === `v1 333 23456 100000 ${MEMORY_LIMIT}` || cgroup === `v2 23456 100000 ${MEMORY_LIMIT}`,
    `the container's cgroup has the plugin's CPU and memory settings: ${cgroup}`,
  );
  // The createRuntime hook ran with this container's state.
  const created = JSON.parse(readFileSync(join(hookOut, 'create-runtime.json'), 'utf8')) as { id: string };
  assert.equal(created.id, containerId);

  await d.runtime.stopContainer({ containerId, timeout: 0n });
  await d.runtime.removeContainer({ containerId });
  await until('the poststop hook to have run', () => existsSync(join(hookOut, 'poststop.json')), 30_000);
  assert.equal((JSON.parse(readFileSync(join(hookOut, 'poststop.json'), 'utf8')) as { id: string }).id, containerId);
});
