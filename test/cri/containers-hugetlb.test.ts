// Hugepage limits as a kubelet sends them: one per page size of the node, 0 when the pod asks for
// none. A real container goes through runc with them. Where this host has no hugetlb controller the
// limits are left out and the container runs; where it has one, they reach the container's cgroup.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ContainerConfig, ContainerState } from '../../proto/gen/runtime/v1/api.ts';
import { needs } from '../support/prereq.ts';
import { startRuncContainers } from '../support/runc-containers.ts';
import { until } from '../support/wait.ts';
import { controllerDir, hasController } from '../../node/skiffd/cgroups/layout.ts';

/** The node's page sizes as the kubelet names them (hugepages-2048kB -> 2MB). */
function nodePageSizes(): string[] {
  let names: string[] = [];
  try {
    names = readdirSync('/sys/kernel/mm/hugepages');
  } catch {
    return ['2MB'];
  }
  const sizes = names.flatMap((n) => {
    const kb = Number(/^hugepages-(\d+)kB$/.exec(n)?.[1]);
    if (!kb) return [];
    return [kb % (1 << 20) === 0 ? `${kb >> 20}GB` : kb % 1024 === 0 ? `${kb >> 10}MB` : `${kb}KB`];
  });
  return sizes.length > 0 ? sizes : ['2MB'];
}

test("containers: a kubelet's hugepage limits do not stop a container; with a hugetlb controller they apply", { timeout: 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const debug: string[] = [];
  const { manager: m, pod, cgroupParent } = await startRuncContainers(t, { log: { info: () => {}, warn: () => {}, debug: (msg) => debug.push(msg) } });

  const pageSizes = nodePageSizes();
  const id = await m.create({
    podSandboxId: pod.id,
    sandboxConfig: undefined,
    config: ContainerConfig.fromPartial({
      metadata: { name: 'huge', attempt: 0 },
      image: { image: 'busybox' },
      command: ['sh', '-c', 'echo started; sleep 30'],
      logPath: 'huge/0.log',
      linux: {
        resources: {
          cpuShares: 2n,
          memoryLimitInBytes: 32n << 20n,
          hugepageLimits: pageSizes.map((pageSize) => ({ pageSize, limit: 0n })),
        },
      },
    }),
  });
  // Without tolerance runc refuses here: "cannot set hugetlb limit: container could not join or create cgroup".
  await m.start(id);
  const running = await until('the container to run', async () => {
    const v = await m.status(id);
    assert.notEqual(v.state, ContainerState.CONTAINER_EXITED, `container exited: ${v.record.reason} ${v.record.message ?? ''}`);
    return v.state === ContainerState.CONTAINER_RUNNING ? v : undefined;
  });
  assert.equal(running.state, ContainerState.CONTAINER_RUNNING);
  const log = join(pod.logDirectory, 'huge/0.log');
  await until('the container to write its log', () => existsSync(log) && readFileSync(log, 'utf8').includes('started'));

  const cgroup = `${cgroupParent}/skiffd-${id}`;
  const memoryDir = controllerDir('memory', cgroup);
  assert.ok(memoryDir && existsSync(memoryDir), 'the container has its memory cgroup');
  if (hasController('hugetlb')) {
    // The "controller exists" path on a host that has it: each limit in the container's hugetlb cgroup.
    const hugetlbDir = controllerDir('hugetlb', cgroup)!;
    for (const size of pageSizes) {
      const file = join(hugetlbDir, `hugetlb.${size}.limit_in_bytes`);
      const v2File = join(hugetlbDir, `hugetlb.${size}.max`);
      const value = readFileSync(existsSync(file) ? file : v2File, 'utf8').trim();
      assert.equal(value, '0', `hugetlb limit for ${size}`);
    }
  } else {
    console.log(`# no hugetlb cgroup controller on this host: limits for ${pageSizes.join(', ')} were left out and the container runs`);
    // Said once, at start, for whoever debugs a pod that asked for hugepages.
    assert.deepEqual(
      debug.filter((l) => l.includes('hugetlb')),
      ['no hugetlb cgroup controller on this host: hugepage limits are left out of container specs'],
    );
  }
  await m.stop(id, 0);
});
