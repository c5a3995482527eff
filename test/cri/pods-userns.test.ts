// Pods in user namespaces of their own, through a real skiffd, runc and a pulled image: the mappings
// seen from inside (/proc/self/uid_map, gid_map), every container of the pod in the one user namespace
// that owns the pod's other namespaces, the root filesystem and volumes (plain, and ID-mapped as the
// kubelet asks) owned as they should be from inside and from the host, the node's user namespace, and
// the requests that are refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Status } from 'nice-grpc';
import { ContainerState, NamespaceMode, type ContainerConfig, type DeepPartial, type PodSandboxConfig } from '../../proto/gen/runtime/v1/api.ts';
import { needs } from '../support/prereq.ts';
import { startSkiffd, type SkiffdHandle } from '../support/skiffd.ts';
import { buildImage, buildTar, busyboxBaseEntries, overlayTestEntries, Pusher } from '../support/image-builder.ts';
import { skiffdNetworkConfig } from '../support/netns.ts';
import { grpcCode, podConfig } from '../support/pods.ts';
import { until } from '../support/wait.ts';
import { startPodWorld } from '../support/pod-world.ts';
import { planUserNamespace, UserNamespaceRequestError } from '../../node/skiffd/pods/userns.ts';
import { containerUserNamespace } from '../../node/skiffd/containers/userns.ts';

const PREREQS = { root: true, commands: ['runc', 'conmon', 'unshare', 'nsenter', 'perl', 'catatonit', '/usr/lib/cni/bridge', '/usr/bin/docker-registry'] };

const UIDS = { containerId: 0, hostId: 300_000, length: 65_536 };
const GIDS = { containerId: 0, hostId: 400_000, length: 65_536 };
const USERNS = { mode: NamespaceMode.POD, uids: [UIDS], gids: [GIDS] };

function withUserns(cfg: DeepPartial<PodSandboxConfig>, userns: unknown): DeepPartial<PodSandboxConfig> {
  const ns = cfg.linux!.securityContext!.namespaceOptions!;
  return { ...cfg, linux: { ...cfg.linux, securityContext: { namespaceOptions: { ...ns, usernsOptions: userns as never } } } };
}

function stdoutOf(path: string): string[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => / stdout [FP] (.*)$/.exec(line)?.[1])
    .filter((l): l is string => l !== undefined);
}

test('user namespace options: what is accepted and refused, without a daemon', () => {
  const field = 'f';
  assert.equal(planUserNamespace(undefined, field), undefined);
  assert.equal(planUserNamespace({ mode: NamespaceMode.NODE, uids: [], gids: [] }, field), undefined);
  assert.deepEqual(planUserNamespace(USERNS, field), { uids: UIDS, gids: GIDS });
  const refused = (options: Parameters<typeof planUserNamespace>[0], message: RegExp) =>
    assert.throws(
      () => planUserNamespace(options, field),
      (err: Error) => err instanceof UserNamespaceRequestError && message.test(err.message),
    );
  refused({ mode: NamespaceMode.POD, uids: [UIDS, { ...UIDS, hostId: 500_000 }], gids: [GIDS] }, /only one mapping is supported \(2 given\)/);
  refused({ mode: NamespaceMode.POD, uids: [{ ...UIDS, containerId: 1 }], gids: [GIDS] }, /container ID 0 must be mapped/);
  refused({ mode: NamespaceMode.POD, uids: [], gids: [GIDS] }, /f\.uids: mode POD needs one mapping/);
  refused({ mode: NamespaceMode.POD, uids: [{ ...UIDS, hostId: 0 }], gids: [GIDS] }, /host ID 0 must not be mapped/);
  refused({ mode: NamespaceMode.POD, uids: [{ ...UIDS, hostId: 2 ** 32 - 10 }], gids: [GIDS] }, /go past 4294967295/);
  refused({ mode: NamespaceMode.CONTAINER, uids: [], gids: [] }, /CONTAINER is not supported for user namespaces/);
  refused({ mode: NamespaceMode.TARGET, uids: [], gids: [] }, /TARGET is not supported for user namespaces/);
  refused({ mode: NamespaceMode.NODE, uids: [UIDS], gids: [GIDS] }, /mode NODE takes no ID mappings/);

  // A container shares its pod's user namespace: no options or POD without mappings mean the pod's.
  const pod = { uids: UIDS, gids: GIDS };
  assert.deepEqual(containerUserNamespace(undefined, pod), pod);
  assert.deepEqual(containerUserNamespace({ mode: NamespaceMode.POD, uids: [], gids: [] }, pod), pod);
  assert.deepEqual(containerUserNamespace(USERNS, pod), pod);
  assert.equal(containerUserNamespace({ mode: NamespaceMode.NODE, uids: [], gids: [] }, undefined), undefined);
  assert.throws(() => containerUserNamespace({ ...USERNS, uids: [{ ...UIDS, hostId: 500_000 }] }, pod), /differ from the pod's/);
  assert.throws(() => containerUserNamespace({ mode: NamespaceMode.NODE, uids: [], gids: [] }, pod), /the pod has its own user namespace/);
  assert.throws(() => containerUserNamespace(USERNS, undefined), /pod was created without a user namespace/);
});

test('a pod in its own user namespace: mappings, one namespace for all, rootfs and volume ownership, refusals', { timeout: 240_000 }, async (t) => {
  if (!needs(t, PREREQS)) return;
  const world = await startPodWorld(t, 'skiff-userns-');
  const { net, registry, cleanups } = world;

  // Files owned by root, by uid 1000 (home/app, 0750) and a set-user-ID file, in two layers.
  const image = buildImage({
    format: 'oci',
    layers: [await buildTar(busyboxBaseEntries()), await buildTar(overlayTestEntries('userns'))],
    env: ['PATH=/bin:/usr/bin'],
  });
  const pusher = new Pusher(registry.url);
  for (const b of [image.config, ...image.layers]) await pusher.blob('skiff/userns', b);
  await pusher.manifest('skiff/userns', '1', image.manifest);
  const ref = `${registry.host}/skiff/userns:1`;

  const config = `${skiffdNetworkConfig(net)}\n[registry.configs."${registry.host}"]\ninsecure = true\n`;
  let d: SkiffdHandle = await startSkiffd({ config });
  const first = d;
  // Cleanups run newest first: the pods go through whichever daemon runs then (the restarted one, later),
  // then that daemon stops, then the first one's handle removes the temp dir.
  cleanups.push(() => first.cleanup());
  cleanups.push(() => d.cleanup());
  cleanups.push(async () => {
    for (const p of (await d.runtime.listPodSandbox({})).items) await d.runtime.removePodSandbox({ podSandboxId: p.id });
  });

  // Advertised for the default handler ("", and by its name), because the checks passed here.
  const st = await d.runtime.status({ verbose: false });
  assert.deepEqual(
    st.runtimeHandlers.map((h) => [h.name, h.features?.userNamespaces]),
    [
      ['', true],
      ['runc', true],
    ],
    d
      .logs()
      .split('\n')
      .filter((l) => l.includes('user namespaces'))
      .join('\n'),
  );
  await d.images.pullImage({ image: { image: ref } });

  const logDir = join(world.dir, 'logs');
  const volume = join(world.dir, 'volume');
  mkdirSync(volume);
  chmodSync(volume, 0o777);
  writeFileSync(join(volume, 'from-host'), 'host\n');
  // The kubelet's kind: root-owned, and ID-mapped with the pod's user namespace.
  const mapped = join(world.dir, 'mapped');
  mkdirSync(mapped);
  writeFileSync(join(mapped, 'secret'), 'only root reads this\n', { mode: 0o600 });
  const mappedFile = join(world.dir, 'mapped-file');
  writeFileSync(mappedFile, 'a file volume\n', { mode: 0o600 });

  const podCfg = withUserns(podConfig('userns', { pid: NamespaceMode.POD, logDirectory: logDir, hostname: 'userns-host' }), USERNS);
  const { podSandboxId } = await d.runtime.runPodSandbox({ config: podCfg });
  const podStatus = await d.runtime.podSandboxStatus({ podSandboxId, verbose: true });
  assert.deepEqual(podStatus.status?.linux?.namespaces?.options?.usernsOptions, USERNS);
  const podUserns = join(d.state, 'pods', podSandboxId, 'ns', 'user');
  const podUsernsIno = statSync(podUserns).ino;

  const owner = (p: string) => {
    const s = lstatSync(p);
    return `${s.uid}:${s.gid}`;
  };
  const ctr = (name: string, extra: DeepPartial<ContainerConfig> = {}): DeepPartial<ContainerConfig> => ({
    metadata: { name, attempt: 0 },
    image: { image: ref },
    logPath: `${name}.log`,
    mounts: [
      { containerPath: '/vol', hostPath: volume },
      { containerPath: '/mapped', hostPath: mapped, uidMappings: [UIDS], gidMappings: [GIDS] },
      // A file, as the kubelet binds /etc/hosts.
      { containerPath: '/etc/mapped-file', hostPath: mappedFile, uidMappings: [UIDS], gidMappings: [GIDS] },
      // The image itself as a volume: its layers ID-mapped as the rootfs's are.
      { containerPath: '/imgvol', image: { image: ref }, readonly: true },
    ],
    linux: { securityContext: { namespaceOptions: { pid: NamespaceMode.POD, usernsOptions: USERNS } } },
    ...extra,
  });
  const create = async (name: string, extra: DeepPartial<ContainerConfig> = {}) =>
    (await d.runtime.createContainer({ podSandboxId, config: ctr(name, extra), sandboxConfig: podCfg })).containerId;
  const status = async (id: string) => (await d.runtime.containerStatus({ containerId: id })).status!;
  const waitExited = (id: string) =>
    until(`container ${id.slice(0, 12)} to exit`, async () => ((await status(id)).state === ContainerState.CONTAINER_EXITED ? status(id) : undefined), 60_000);

  // A long-running container holds the namespace; a second one reports what it sees and exits.
  const holder = await create('holder', { command: ['sleep', '300'] });
  await d.runtime.startContainer({ containerId: holder });
  const report = [
    'cat /proc/self/uid_map /proc/self/gid_map',
    'id -u; id -g',
    'stat -c "%n %u:%g %A" / /etc/passwd /home/app /usr/bin/setuid-tool /vol/from-host',
    'busybox touch /root/made-by-root && echo root-dir-writable',
    'echo hi > /vol/from-container && stat -c "%n %u:%g" /vol/from-container',
    'busybox readlink /proc/self/ns/user',
    'busybox hostname',
    'stat -c "%n %u:%g %A" /mapped /mapped/secret; cat /mapped/secret',
    'echo hi > /mapped/from-container && stat -c "%n %u:%g" /mapped/from-container',
    'stat -c "%n %u:%g %A" /etc/mapped-file; cat /etc/mapped-file',
    'stat -c "%n %u:%g %A" /imgvol/home/app /imgvol/usr/bin/setuid-tool',
  ].join('; ');
  const reporter = await create('reporter', { command: ['sh', '-c', report] });
  await d.runtime.startContainer({ containerId: reporter });
  const done = await waitExited(reporter);
  const lines = stdoutOf(join(logDir, 'reporter.log'));
  assert.equal(done.exitCode, 0, `reporter failed; its output: ${lines.join(' | ')}`);

  // Inside: the pod's mappings, root of the user namespace.
  assert.match(lines[0], /^\s*0\s+300000\s+65536$/);
  assert.match(lines[1], /^\s*0\s+400000\s+65536$/);
  assert.deepEqual(lines.slice(2, 4), ['0', '0']);
  // Inside, the image's owners are as in the image (the set-user-ID bit kept); the host's root is nobody.
  assert.deepEqual(lines.slice(4, 9), [
    '/ 0:0 drwxr-xr-x',
    '/etc/passwd 0:0 -rw-r--r--',
    '/home/app 1000:1000 drwxr-x---',
    '/usr/bin/setuid-tool 0:0 -rwsr-xr-x',
    '/vol/from-host 65534:65534 -rw-r--r--',
  ]);
  assert.equal(lines[9], 'root-dir-writable');
  assert.equal(lines[10], '/vol/from-container 0:0');
  assert.equal(lines[12], 'userns-host');
  // Through the ID-mapped volume, the host's root is the container's root, both ways.
  assert.deepEqual(lines.slice(13, 19), [
    '/mapped 0:0 drwxr-xr-x',
    '/mapped/secret 0:0 -rw-------',
    'only root reads this',
    '/mapped/from-container 0:0',
    '/etc/mapped-file 0:0 -rw-------',
    'a file volume',
  ]);
  // An image volume's files belong to the pod's users as in the image, as the rootfs's do.
  assert.deepEqual(lines.slice(19), ['/imgvol/home/app 1000:1000 drwxr-x---', '/imgvol/usr/bin/setuid-tool 0:0 -rwsr-xr-x']);
  assert.equal(owner(join(mapped, 'from-container')), '0:0');
  // The ID-mapped clone is let go once the runtime has created the container.
  const idmapLeft = () =>
    readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .map((l) => l.split(' ')[4] ?? '')
      .filter((mountPoint) => mountPoint.startsWith(join(d.state, 'idmap')));
  assert.deepEqual(idmapLeft(), [], 'no ID-mapped clone is left on the host');

  // The same user namespace for every container, the pod's pinned one, and it owns the pod's others
  // (runc could not have joined them from inside it otherwise).
  const holderPid = (JSON.parse((await d.runtime.containerStatus({ containerId: holder, verbose: true })).info.info) as { pid: number }).pid;
  assert.equal(readlinkSync(`/proc/${holderPid}/ns/user`), lines[11]);
  assert.equal(lines[11], `user:[${podUsernsIno}]`);
  assert.equal(readlinkSync(`/proc/${holderPid}/ns/net`), `net:[${statSync(join(d.state, 'pods', podSandboxId, 'ns', 'net')).ino}]`);
  assert.match(readFileSync(`/proc/${holderPid}/uid_map`, 'utf8'), /^\s*0\s+300000\s+65536\s*$/);
  // The container's processes are the pod's host IDs.
  const procStatus = readFileSync(`/proc/${holderPid}/status`, 'utf8');
  assert.match(procStatus, /^Uid:\s+300000\s+300000\s+300000\s+300000$/m);
  assert.match(procStatus, /^Gid:\s+400000\s+400000\s+400000\s+400000$/m);

  // Outside: the holder's rootfs is owned by the pod's host IDs, the image layers are untouched, and
  // what the container wrote to the volume belongs to the pod's root.
  const rootfs = join(d.root, 'containers', holder, 'rootfs');
  assert.equal(owner(rootfs), '300000:400000');
  assert.equal(owner(join(rootfs, 'etc/passwd')), '300000:400000');
  assert.equal(owner(join(rootfs, 'home/app')), '301000:401000');
  assert.equal(owner(join(rootfs, 'bin/sh')), '300000:400000', 'symlinks are mapped too');
  assert.equal(lstatSync(join(rootfs, 'usr/bin/setuid-tool')).mode & 0o7777, 0o4755);
  // Nothing was copied or changed: the holder's writable layer has only the mount points the runtime
  // made, and the image's layers are owned by root on disk as unpacked.
  assert.deepEqual(readdirSync(join(d.root, 'containers', holder, 'upper')).sort(), ['etc', 'imgvol', 'mapped', 'proc', 'sys', 'vol']);
  assert.deepEqual(readdirSync(join(d.root, 'containers', holder, 'upper', 'etc')).sort(), ['hostname', 'hosts', 'mapped-file', 'resolv.conf']);
  const layerOwners = readdirSync(join(d.root, 'images'), { recursive: true, withFileTypes: true })
    .filter((e) => e.name === 'passwd' && e.parentPath.endsWith('/etc'))
    .map((e) => owner(join(e.parentPath, e.name)));
  assert.ok(layerOwners.length > 0, 'the image layer with /etc/passwd was found');
  assert.deepEqual([...new Set(layerOwners)], ['0:0']);
  // No ID-mapped layer clone is left attached on the host.
  assert.deepEqual(idmapLeft(), [], 'no ID-mapped clone is left on the host');
  assert.equal(owner(join(volume, 'from-container')), '300000:400000');
  assert.equal(owner(join(volume, 'from-host')), '0:0');

  // ExecSync joins the container's user namespace too.
  // The running container still has its ID-mapped volume after the host let go of its clone.
  const exec = await d.runtime.execSync({ containerId: holder, cmd: ['sh', '-c', 'id -u; cat /proc/self/uid_map; cat /mapped/secret'], timeout: 30n });
  assert.equal(exec.exitCode, 0, exec.stderr.toString());
  assert.match(exec.stdout.toString(), /^0\n\s*0\s+300000\s+65536\nonly root reads this\n$/);

  // kill -9 of the daemon: the pod stays ready with its user namespace, its container keeps running,
  // and a new container joins the same user namespace.
  assert.equal((await d.stop('SIGKILL')).signal, 'SIGKILL');
  d = await startSkiffd({ config, dir: first.dir });
  assert.equal((await d.runtime.podSandboxStatus({ podSandboxId })).status?.state, 0, 'the pod is still SANDBOX_READY');
  assert.equal((await status(holder)).state, ContainerState.CONTAINER_RUNNING);
  const after = await create('after-restart', { command: ['busybox', 'readlink', '/proc/self/ns/user'] });
  await d.runtime.startContainer({ containerId: after });
  assert.equal((await waitExited(after)).exitCode, 0);
  assert.deepEqual(stdoutOf(join(logDir, 'after-restart.log')), [`user:[${podUsernsIno}]`]);

  // A container with a PID namespace of its own makes it inside the pod's user namespace.
  const ownPid = await create('own-pid', {
    command: ['sh', '-c', 'echo $$; busybox readlink /proc/self/ns/user'],
    linux: { securityContext: { namespaceOptions: { pid: NamespaceMode.CONTAINER } } },
  });
  await d.runtime.startContainer({ containerId: ownPid });
  assert.equal((await waitExited(ownPid)).exitCode, 0);
  assert.deepEqual(stdoutOf(join(logDir, 'own-pid.log')), ['1', `user:[${podUsernsIno}]`]);

  // A container may not leave or differ from its pod's user namespace.
  const refusal = async (name: string, extra: DeepPartial<ContainerConfig>, message: RegExp) => {
    const r = await grpcCode(create(name, extra));
    assert.equal(r.code, Status.INVALID_ARGUMENT, r.details);
    assert.match(r.details, message);
  };
  const nsWith = (usernsOptions: unknown, more: object = {}) => ({
    linux: { securityContext: { namespaceOptions: { usernsOptions: usernsOptions as never, ...more } } },
  });
  await refusal('other-map', nsWith({ ...USERNS, uids: [{ ...UIDS, hostId: 500_000 }] }), /differ from the pod's/);
  await refusal('node-userns', nsWith({ mode: NamespaceMode.NODE, uids: [], gids: [] }), /the pod has its own user namespace/);
  await refusal('host-net', nsWith(USERNS, { network: NamespaceMode.NODE }), /namespace_options\.network: NODE/);
  await refusal(
    'unmapped-user',
    { linux: { securityContext: { runAsUser: { value: 70_000n } } } },
    /run_as_user: user 70000 is not mapped in the pod's user namespace \(uids 0\.\.65535\)/,
  );
  await refusal('unmapped-group', { linux: { securityContext: { supplementalGroups: [65_536n] } } }, /group 65536 is not mapped in the pod's user namespace/);
  await refusal(
    'other-mount-map',
    { mounts: [{ containerPath: '/vol', hostPath: volume, uidMappings: [{ ...UIDS, hostId: 500_000 }], gidMappings: [GIDS] }] },
    /config\.mounts\[0\]: uidMappings and gidMappings must each be the pod's one user namespace mapping/,
  );

  // Pods: the requests that cannot be done, refused before anything is made.
  const podRefusal = async (userns: unknown, message: RegExp, options: Parameters<typeof podConfig>[1] = {}) => {
    const r = await grpcCode(d.runtime.runPodSandbox({ config: withUserns(podConfig('refused', options), userns) }));
    assert.equal(r.code, Status.INVALID_ARGUMENT, r.details);
    assert.match(r.details, message);
  };
  await podRefusal({ ...USERNS, uids: [UIDS, { ...UIDS, hostId: 500_000 }] }, /userns_options\.uids: only one mapping is supported/);
  await podRefusal({ ...USERNS, gids: [{ ...GIDS, containerId: 1 }] }, /userns_options\.gids\[0\]: container ID 0 must be mapped/);
  await podRefusal({ mode: NamespaceMode.CONTAINER, uids: [], gids: [] }, /CONTAINER is not supported/);
  await podRefusal({ mode: NamespaceMode.TARGET, uids: [], gids: [] }, /TARGET is not supported/);
  await podRefusal(USERNS, /cannot use the node's network namespace/, { network: NamespaceMode.NODE });
  await podRefusal(USERNS, /cannot use the node's pid namespace/, { pid: NamespaceMode.NODE });
  const leftovers = (await d.runtime.listPodSandbox({})).items.filter((p) => p.id !== podSandboxId);
  assert.deepEqual(leftovers, []);

  // The node's user namespace: the host's map.
  const nodeCfg = withUserns(podConfig('nodens', { logDirectory: logDir }), { mode: NamespaceMode.NODE, uids: [], gids: [] });
  const node = await d.runtime.runPodSandbox({ config: nodeCfg });
  const nodeCtr = (
    await d.runtime.createContainer({
      podSandboxId: node.podSandboxId,
      sandboxConfig: nodeCfg,
      config: {
        metadata: { name: 'nodens', attempt: 0 },
        image: { image: ref },
        logPath: 'nodens.log',
        command: ['cat', '/proc/self/uid_map'],
        linux: { securityContext: { namespaceOptions: { usernsOptions: { mode: NamespaceMode.NODE, uids: [], gids: [] } } } },
      },
    })
  ).containerId;
  await d.runtime.startContainer({ containerId: nodeCtr });
  assert.equal((await waitExited(nodeCtr)).exitCode, 0);
  assert.deepEqual(
    stdoutOf(join(logDir, 'nodens.log')).map((l) => l.trim().split(/\s+/)),
    readFileSync('/proc/self/uid_map', 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => l.trim().split(/\s+/)),
  );

  const mappedInNodePod = await grpcCode(
    d.runtime.createContainer({
      podSandboxId: node.podSandboxId,
      sandboxConfig: nodeCfg,
      config: {
        metadata: { name: 'mapped-in-node', attempt: 0 },
        image: { image: ref },
        mounts: [{ containerPath: '/mapped', hostPath: mapped, uidMappings: [UIDS], gidMappings: [GIDS] }],
      },
    }),
  );
  assert.equal(mappedInNodePod.code, Status.INVALID_ARGUMENT, mappedInNodePod.details);
  assert.match(mappedInNodePod.details, /config\.mounts\[0\]: uidMappings\/gidMappings given, but the pod has no user namespace of its own/);

  // Removing the pod unpins its user namespace with the others.
  await d.runtime.stopPodSandbox({ podSandboxId });
  await d.runtime.removePodSandbox({ podSandboxId });
  const nsfs = readFileSync('/proc/self/mountinfo', 'utf8');
  assert.ok(!nsfs.includes(join(d.state, 'pods', podSandboxId)), 'no mount of the removed pod is left');
});
