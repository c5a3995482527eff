// The OCI spec builder, as a pure function: Kubernetes command/args semantics, env, users and groups
// from the image's files, capabilities, namespaces from the pod, mounts, resources, oom_score_adj.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ServerError, Status } from 'nice-grpc-common';
import { ContainerConfig, MountPropagation, NamespaceMode, Signal, type DeepPartial } from '../../proto/gen/runtime/v1/api.ts';
import { buildSpec, type SpecInput, type HostFacts } from '../../node/skiffd/containers/spec-builder.ts';
import { ALL_CAPABILITIES, DEFAULT_CAPABILITIES, capabilitiesFromMask } from '../../node/skiffd/confinement/capabilities.ts';
import { defaultSeccompProfile, type SeccompProfile } from '../../node/skiffd/confinement/seccomp.ts';
import { signalNumber } from '../../node/skiffd/containers/signals.ts';
import { cgroupfsDriver, systemdDriver } from '../../node/skiffd/cgroups/driver.ts';

const host: HostFacts = {
  daemonOomScoreAdj: 0,
  capabilities: [...ALL_CAPABILITIES],
  cgroupMode: 'hybrid',
  swapAccounting: true,
  hugetlb: true,
  defaultCgroupParent: '/skiffd',
  cgroups: cgroupfsDriver,
};
const passwd = 'root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\nnobody:x:65534:65534::/:/bin/false\n';
const group = 'root:x:0:\napp:x:1000:\nwheel:x:10:root,app\naudio:x:29:app\n';

function input(config: DeepPartial<ContainerConfig>, over: Partial<SpecInput> = {}): SpecInput {
  const full = ContainerConfig.fromPartial({ metadata: { name: 'c' }, image: { image: 'img' }, ...config });
  return {
    id: 'a'.repeat(64),
    config: full,
    pod: {
      id: 'p'.repeat(64),
      hostname: 'podhost',
      namespaces: { net: '/run/ns/net', ipc: '/run/ns/ipc', uts: '/run/ns/uts' },
      cgroupParent: '/kubepods/pod1',
    },
    image: { entrypoint: ['/entry'], cmd: ['default-arg'], env: ['PATH=/img/bin', 'A=image'], workingDir: '/work', user: '', stopSignal: 'SIGQUIT' },
    rootfsPath: '/rootfs',
    passwd,
    group,
    mounts: full.mounts,
    devices: [],
    host,
    ...over,
  };
}

function invalid(fn: () => unknown, field: RegExp): void {
  assert.throws(fn, (err: unknown) => err instanceof ServerError && err.code === Status.INVALID_ARGUMENT && field.test(err.details));
}

test('hugepage limits reach the spec where the hugetlb controller exists, and are left out where it does not', () => {
  // What a kubelet sends for a node with 2 MiB and 1 GiB pages and a pod that asks for none.
  const resources = {
    memoryLimitInBytes: 64n << 20n,
    hugepageLimits: [
      { pageSize: '2MB', limit: 0n },
      { pageSize: '1GB', limit: 0n },
    ],
  };
  const withController = buildSpec(input({ linux: { resources } }, { host: { ...host, hugetlb: true } })).spec.linux.resources!;
  assert.deepEqual(withController.hugepageLimits, [
    { pageSize: '2MB', limit: 0 },
    { pageSize: '1GB', limit: 0 },
  ]);
  const without = buildSpec(input({ linux: { resources } }, { host: { ...host, hugetlb: false } })).spec.linux.resources!;
  assert.equal(without.hugepageLimits, undefined, 'no hugetlb controller: runc would refuse the container');
  assert.deepEqual(without.memory, { limit: 64 << 20, swap: 64 << 20 }, 'the other limits stay');
  // A malformed page size is bad input whether or not the limits could apply.
  invalid(
    () => buildSpec(input({ linux: { resources: { hugepageLimits: [{ pageSize: '2M', limit: 0n }] } } }, { host: { ...host, hugetlb: false } })),
    /hugepage_limits\[0\]\.page_size/,
  );
});

test('command replaces the entrypoint and drops the image cmd; args replace cmd', () => {
  assert.deepEqual(buildSpec(input({})).spec.process.args, ['/entry', 'default-arg']);
  assert.deepEqual(buildSpec(input({ args: ['x', 'y'] })).spec.process.args, ['/entry', 'x', 'y']);
  assert.deepEqual(buildSpec(input({ command: ['/bin/sh'] })).spec.process.args, ['/bin/sh']);
  assert.deepEqual(buildSpec(input({ command: ['/bin/sh'], args: ['-c', 'true'] })).spec.process.args, ['/bin/sh', '-c', 'true']);
  invalid(() => buildSpec(input({}, { image: {} })), /config\.command/);
});

test('env: image env, then config env overriding by name; HOME from passwd; working dir', () => {
  const { spec } = buildSpec(
    input({
      envs: [
        { key: 'A', value: Buffer.from('config') },
        { key: 'B', value: Buffer.from('b=c') },
      ],
      linux: { securityContext: { runAsUser: { value: 1000n } } },
    }),
  );
  assert.deepEqual(spec.process.env.filter((e) => /^(PATH|A|B|HOME|HOSTNAME)=/.test(e)).sort(), [
    'A=config',
    'B=b=c',
    'HOME=/home/app',
    'HOSTNAME=podhost',
    'PATH=/img/bin',
  ]);
  assert.equal(spec.process.cwd, '/work');
  assert.equal(buildSpec(input({ workingDir: '/elsewhere' })).spec.process.cwd, '/elsewhere');
});

test('users and groups resolve from the image /etc/passwd and /etc/group', () => {
  const byName = buildSpec(input({ linux: { securityContext: { runAsUsername: 'app' } } }));
  assert.deepEqual(byName.spec.process.user, { uid: 1000, gid: 1000, additionalGids: [1000, 10, 29] });
  const withGroups = buildSpec(input({ linux: { securityContext: { runAsUser: { value: 1000n }, runAsGroup: { value: 5n }, supplementalGroups: [77n] } } }));
  assert.deepEqual(withGroups.spec.process.user, { uid: 1000, gid: 5, additionalGids: [5, 10, 29, 77] });
  const fromImage = buildSpec(input({}, { image: { cmd: ['x'], user: 'app:wheel' } }));
  assert.deepEqual([fromImage.user.uid, fromImage.user.gid], [1000, 10]);
  const unknownUid = buildSpec(input({ linux: { securityContext: { runAsUser: { value: 4242n } } } }));
  assert.deepEqual([unknownUid.user.uid, unknownUid.user.gid], [4242, 0]);
  invalid(() => buildSpec(input({ linux: { securityContext: { runAsUsername: 'ghost' } } })), /run_as_username/);
  invalid(() => buildSpec(input({ linux: { securityContext: { runAsGroup: { value: 1n } } } })), /run_as_group/);
});

test('capabilities: default set, add/drop, ALL, privileged, unknown names rejected', () => {
  const caps = (c: DeepPartial<ContainerConfig>) => buildSpec(input(c)).spec.process.capabilities!;
  assert.deepEqual([...caps({}).bounding].sort(), [...DEFAULT_CAPABILITIES].sort());
  assert.deepEqual(caps({}).inheritable, []);
  const added = caps({ linux: { securityContext: { capabilities: { addCapabilities: ['NET_ADMIN'], dropCapabilities: ['CAP_CHOWN'] } } } });
  assert.ok(added.effective.includes('CAP_NET_ADMIN') && !added.effective.includes('CAP_CHOWN'));
  assert.deepEqual(caps({ linux: { securityContext: { capabilities: { dropCapabilities: ['ALL'], addCapabilities: ['sys_time'] } } } }).permitted, [
    'CAP_SYS_TIME',
  ]);
  assert.equal(caps({ linux: { securityContext: { capabilities: { addCapabilities: ['ALL'] } } } }).bounding.length, 41);
  assert.equal(caps({ linux: { securityContext: { privileged: true } } }).bounding.length, 41);
  const ambient = caps({ linux: { securityContext: { capabilities: { addAmbientCapabilities: ['CAP_NET_RAW'] } } } });
  assert.deepEqual(ambient.ambient, ['CAP_NET_RAW']);
  invalid(() => caps({ linux: { securityContext: { capabilities: { addCapabilities: ['CAP_FLY'] } } } }), /add_capabilities\[0\]/);
  // A host without CAP_SYS_RESOURCE (mask 0x1fffeffffff): privileged gets everything else, never more.
  const restricted = capabilitiesFromMask('000001fffeffffff');
  assert.equal(restricted.length, 40);
  assert.ok(!restricted.includes('CAP_SYS_RESOURCE'));
  const priv = buildSpec(input({ linux: { securityContext: { privileged: true } } }, { host: { ...host, capabilities: restricted } })).spec.process
    .capabilities!;
  assert.deepEqual(priv.bounding, restricted);
  assert.ok(!caps({ linux: { securityContext: { capabilities: { addCapabilities: ['ALL'] } } } }).bounding.includes('CAP_NOPE'));
});

test('namespaces are joined by path from the pod; pid follows the requested mode', () => {
  const ns = (c: DeepPartial<ContainerConfig>, over: Partial<SpecInput> = {}) => buildSpec(input(c, over)).spec.linux.namespaces;
  assert.deepEqual(ns({}), [
    { type: 'mount' },
    { type: 'network', path: '/run/ns/net' },
    { type: 'ipc', path: '/run/ns/ipc' },
    { type: 'uts', path: '/run/ns/uts' },
    { type: 'pid' },
  ]);
  const hostNet = ns({}, { pod: { id: 'p', namespaces: {} } });
  assert.deepEqual(hostNet, [{ type: 'mount' }, { type: 'pid' }]);
  const podPid = ns(
    { linux: { securityContext: { namespaceOptions: { pid: NamespaceMode.POD } } } },
    { pod: { id: 'p', namespaces: { pid: '/proc/42/ns/pid' } } },
  );
  assert.deepEqual(
    podPid.find((n) => n.type === 'pid'),
    { type: 'pid', path: '/proc/42/ns/pid' },
  );
  assert.equal(
    ns({ linux: { securityContext: { namespaceOptions: { pid: NamespaceMode.NODE } } } }).find((n) => n.type === 'pid'),
    undefined,
  );
  invalid(() => ns({ linux: { securityContext: { namespaceOptions: { pid: NamespaceMode.TARGET } } } }), /target_id/);
  assert.equal(buildSpec(input({})).spec.hostname, 'podhost');
  assert.equal(ns({}, { host: { ...host, cgroupMode: 'v2' } }).at(-1)!.type, 'cgroup');
});

test('mounts: propagation, readonly, pod files, defaults overridable, parents first', () => {
  const { spec } = buildSpec(
    input(
      {
        mounts: [
          { containerPath: '/data/sub', hostPath: '/h/sub', propagation: MountPropagation.PROPAGATION_PRIVATE },
          { containerPath: '/data', hostPath: '/h/data', readonly: true, propagation: MountPropagation.PROPAGATION_HOST_TO_CONTAINER, selinuxRelabel: true },
          { containerPath: '/dev/shm', hostPath: '/h/shm' },
        ],
      },
      { pod: { id: 'p', namespaces: { ipc: '/run/ns/ipc' }, hostsPath: '/pod/hosts', resolvConfPath: '/pod/resolv.conf' } },
    ),
  );
  const byDest = new Map(spec.mounts.map((m) => [m.destination, m]));
  assert.deepEqual(byDest.get('/data')!.options, ['rbind', 'rslave', 'ro']);
  assert.equal(byDest.get('/dev/shm')!.source, '/h/shm');
  assert.equal(spec.mounts.filter((m) => m.destination === '/dev/shm').length, 1);
  assert.equal(byDest.get('/etc/hosts')!.source, '/pod/hosts');
  assert.equal(byDest.get('/etc/resolv.conf')!.source, '/pod/resolv.conf');
  assert.ok(spec.mounts.findIndex((m) => m.destination === '/data') < spec.mounts.findIndex((m) => m.destination === '/data/sub'));
  assert.equal(spec.linux.rootfsPropagation, 'rslave');
  for (const d of ['/proc', '/dev', '/dev/pts', '/dev/mqueue', '/sys', '/sys/fs/cgroup']) assert.ok(byDest.has(d), d);
  invalid(() => buildSpec(input({ mounts: [{ containerPath: 'rel', hostPath: '/h' }] })), /mounts\[0\]\.container_path/);
});

test("security: readonly rootfs, no_new_privs, the client's masked and read-only paths as given, privileged unmasks", () => {
  const plain = buildSpec(input({ linux: { securityContext: { readonlyRootfs: true, noNewPrivs: true } } })).spec;
  assert.equal(plain.root.readonly, true);
  assert.equal(plain.process.noNewPrivileges, true);
  // As containerd 2: the lists the client sends are the lists; the kubelet sends empty ones for procMount: Unmasked.
  assert.deepEqual([plain.linux.maskedPaths, plain.linux.readonlyPaths], [[], []]);
  const kubelet = buildSpec(input({ linux: { securityContext: { maskedPaths: ['/proc/kcore', '/proc/keys'], readonlyPaths: ['/proc/sys'] } } })).spec;
  assert.deepEqual([kubelet.linux.maskedPaths, kubelet.linux.readonlyPaths], [['/proc/kcore', '/proc/keys'], ['/proc/sys']]);
  const priv = buildSpec(
    input({ linux: { securityContext: { privileged: true } } }, { hostDevices: [{ type: 'c', path: '/dev/kmsg', major: 1, minor: 11 }] }),
  ).spec;
  assert.equal(priv.linux.maskedPaths, undefined);
  assert.deepEqual(priv.linux.resources!.devices, [{ allow: true, access: 'rwm' }]);
  assert.ok(priv.linux.devices!.some((d) => d.path === '/dev/kmsg'));
  assert.ok(!priv.mounts.find((m) => m.destination === '/sys')!.options!.includes('ro'));
});

test('resources -> cgroups; cgroupsPath under the pod parent; oom_score_adj never below the daemon', () => {
  const { spec } = buildSpec(
    input(
      {
        linux: {
          resources: {
            cpuShares: 512n,
            cpuQuota: 50000n,
            cpuPeriod: 100000n,
            cpusetCpus: '0',
            memoryLimitInBytes: 64n << 20n,
            oomScoreAdj: -999n,
            hugepageLimits: [{ pageSize: '2MB', limit: 0n }],
            unified: { 'memory.high': '1' },
          },
        },
      },
      { host: { ...host, daemonOomScoreAdj: -500 } },
    ),
  );
  assert.deepEqual(spec.linux.resources!.cpu, { shares: 512, quota: 50000, period: 100000, cpus: '0' });
  assert.deepEqual(spec.linux.resources!.memory, { limit: 64 << 20, swap: 64 << 20 });
  assert.deepEqual(spec.linux.resources!.hugepageLimits, [{ pageSize: '2MB', limit: 0 }]);
  assert.equal(spec.linux.resources!.unified, undefined, 'unified is cgroup v2 only');
  assert.equal(spec.process.oomScoreAdj, -500);
  assert.equal(spec.linux.cgroupsPath, `/kubepods/pod1/skiffd-${'a'.repeat(64)}`);
  assert.equal(buildSpec(input({ linux: { resources: { oomScoreAdj: 1000n } } })).spec.process.oomScoreAdj, 1000);
  const v2 = buildSpec(input({ linux: { resources: { unified: { 'memory.high': '1' } } } }, { host: { ...host, cgroupMode: 'v2' } })).spec;
  assert.deepEqual(v2.linux.resources!.unified, { 'memory.high': '1' });
});

test("the systemd driver: the container is the scope skiffd-<id>.scope in the pod slice, in runc's slice:prefix:name form", () => {
  const id = 'a'.repeat(64);
  const podPath = '/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice';
  const built = buildSpec(input({}, { host: { ...host, cgroupMode: 'v2', cgroups: systemdDriver }, pod: { ...input({}).pod, cgroupParent: podPath } }));
  assert.equal(built.spec.linux.cgroupsPath, `kubepods-burstable-pod1.slice:skiffd:${id}`);
  assert.equal(built.cgroupPath, `${podPath}/skiffd-${id}.scope`, 'stats read the scope systemd makes');
  const cgroupfs = buildSpec(input({}, { pod: { ...input({}).pod, cgroupParent: '/kubepods/pod1' } }));
  assert.equal(cgroupfs.cgroupPath, cgroupfs.spec.linux.cgroupsPath, 'under cgroupfs the spec names the path itself');
});

test('sysctls need the matching pod namespace', () => {
  const sysctls = (s: Record<string, string>, over: Partial<SpecInput> = {}) =>
    buildSpec(input({}, { sandboxConfig: { linux: { sysctls: s } } as never, ...over })).spec.linux.sysctl;
  assert.deepEqual(sysctls({ 'net.ipv4.ip_forward': '1', 'kernel.shmmax': '100' }), { 'net.ipv4.ip_forward': '1', 'kernel.shmmax': '100' });
  invalid(() => sysctls({ 'net.ipv4.ip_forward': '1' }, { pod: { id: 'p', namespaces: {} } }), /sysctls\[net\.ipv4\.ip_forward\]/);
  invalid(() => sysctls({ 'vm.swappiness': '1' }), /vm\.swappiness/);
});

test('stop signal: config beats image; image names and numbers accepted', () => {
  assert.equal(buildSpec(input({})).stopSignal, signalNumber('SIGQUIT'));
  assert.equal(buildSpec(input({ stopSignal: Signal.SIGUSR1 })).stopSignal, signalNumber('SIGUSR1'));
  assert.equal(buildSpec(input({}, { image: { cmd: ['x'], stopSignal: '9' } })).stopSignal, 9);
  assert.equal(buildSpec(input({}, { image: { cmd: ['x'] } })).stopSignalName, 'SIGTERM');
  assert.equal(signalNumber('SIGRTMIN+3'), 37);
  assert.equal(signalNumber('RTMAX-1'), 63);
});

test("seccomp: RuntimeDefault is the shared allow-list for the container's capabilities; unset means unconfined; privileged gets none", () => {
  const seccomp = (c: DeepPartial<ContainerConfig>) => buildSpec(input(c)).spec.linux.seccomp as SeccompProfile | undefined;
  assert.equal(seccomp({}), undefined);
  assert.equal(seccomp({ linux: { securityContext: { seccomp: { profileType: 1 } } } }), undefined);
  const def = seccomp({ linux: { securityContext: { seccomp: { profileType: 0 } } } })!;
  assert.equal(def.defaultAction, 'SCMP_ACT_ERRNO', 'what is not allowed is refused');
  // The profile of the bounding set the spec gives the container, not a copy per container.
  const bounding = buildSpec(input({ linux: { securityContext: { seccomp: { profileType: 0 } } } })).spec.process.capabilities?.bounding ?? [];
  assert.equal(def, defaultSeccompProfile(bounding));
  const admin = seccomp({ linux: { securityContext: { seccomp: { profileType: 0 }, capabilities: { addCapabilities: ['SYS_ADMIN'] } } } })!;
  assert.equal(admin, defaultSeccompProfile([...bounding, 'CAP_SYS_ADMIN']));
  assert.ok(admin.syscalls.some((r) => r.names.includes('mount') && r.action === 'SCMP_ACT_ALLOW'));
  assert.ok(!def.syscalls.some((r) => r.names.includes('mount')));
  assert.ok(seccomp({ linux: { securityContext: { seccompProfilePath: 'runtime/default' } } }));
  assert.equal(seccomp({ linux: { securityContext: { privileged: true, seccomp: { profileType: 0 } } } }), undefined);
});
