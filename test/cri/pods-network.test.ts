// Pod sandboxes through skiffd's gRPC API on a private CNI network (own conf dir, bridge, subnet and
// host-local data dir): namespaces, IP, hostname, DNS, sysctls, a host port mapping reached from the
// host, idempotent stop/remove that leave nothing behind, list filters, stats and error codes.
import { test } from 'node:test';
import { execFile } from 'node:child_process';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { hostname as nodeHostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Status } from 'nice-grpc';
import { LinuxContainerResources, NamespaceMode, PodSandboxState } from '../../proto/gen/runtime/v1/api.ts';
import { needs } from '../support/prereq.ts';
import { controllerDir } from '../../node/skiffd/cgroups/layout.ts';
import { startSkiffd, type SkiffdHandle } from '../support/skiffd.ts';
import {
  createTestNetwork,
  freePort,
  inNamespaces,
  linkExists,
  mountTypeAt,
  natRulesMentioning,
  nsfsMountsUnder,
  readFromPort,
  serveOnceInNetns,
  skiffdNetworkConfig,
  type TestNetwork,
} from '../support/netns.ts';
import { grpcCode, podConfig, type PodInfo } from '../support/pods.ts';

async function info(d: SkiffdHandle, id: string): Promise<PodInfo> {
  const res = await d.runtime.podSandboxStatus({ podSandboxId: id, verbose: true });
  return JSON.parse(res.info.info) as PodInfo;
}

/** The host's source address toward the outside, if it has one. */
async function hostAddress(): Promise<string[]> {
  const out = await new Promise<string>((resolve) =>
    execFile('ip', ['-4', 'route', 'get', '1.1.1.1'], { timeout: 5_000 }, (_e, stdout) => resolve(stdout ?? '')),
  );
  const src = / src (\d+\.\d+\.\d+\.\d+)/.exec(out)?.[1];
  return src ? [src] : [];
}

function inSubnet(ip: string, subnet: string): boolean {
  const prefix = subnet.split('.').slice(0, 3).join('.') + '.';
  return ip.startsWith(prefix);
}

test('pod sandboxes on a CNI network', { timeout: 120_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['unshare', 'nsenter', 'umount', 'ip', 'iptables-save', 'busybox', '/usr/lib/cni/bridge', '/usr/lib/cni/portmap'] }))
    return;
  const dir = mkdtempSync(join(tmpdir(), 'skiff-pods-net-'));
  const net: TestNetwork = createTestNetwork(dir);
  const d = await startSkiffd({ config: skiffdNetworkConfig(net) });
  const created: string[] = [];
  t.after(async () => {
    for (const id of created) await d.runtime.removePodSandbox({ podSandboxId: id }).catch(() => {});
    await d.cleanup();
    await net.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });
  const run = async (config: ReturnType<typeof podConfig>) => {
    const { podSandboxId } = await d.runtime.runPodSandbox({ config });
    created.push(podSandboxId);
    return podSandboxId;
  };

  await t.test('RunPodSandbox: IP in the pod netns, hostname, DNS, sysctl, /etc files, port mapping from the host', async () => {
    const hostPort = await freePort();
    const id = await run(
      podConfig('web', {
        hostname: 'web-0',
        labels: { app: 'web', tier: 'front' },
        annotations: { 'skiff.test/note': 'kept verbatim' },
        portMappings: [{ containerPort: 8080, hostPort }],
        dns: { servers: ['10.96.0.10', '1.1.1.1'], searches: ['skiff-test.svc.cluster.local', 'cluster.local'], options: ['ndots:5'] },
        sysctls: { 'net.ipv4.ip_unprivileged_port_start': '80' },
      }),
    );
    assert.match(id, /^[0-9a-f]{64}$/);

    const { status } = await d.runtime.podSandboxStatus({ podSandboxId: id });
    assert.equal(status!.state, PodSandboxState.SANDBOX_READY);
    assert.ok(status!.createdAt > 0n);
    assert.deepEqual(status!.labels, { app: 'web', tier: 'front' });
    assert.deepEqual(status!.annotations, { 'skiff.test/note': 'kept verbatim' });
    const ip = status!.network!.ip;
    assert.ok(inSubnet(ip, net.subnet), `pod IP ${ip} is in ${net.subnet}`);

    const pod = await info(d, id);
    assert.ok(pod.namespaces.net && pod.namespaces.ipc && pod.namespaces.uts, JSON.stringify(pod.namespaces));
    assert.equal(pod.namespaces.pid, undefined, 'no shared PID namespace unless asked');
    assert.equal(nsfsMountsUnder(d.state).length, 3, 'net, ipc and uts are pinned as bind mounts');
    assert.equal(mountTypeAt(pod.files.shm!), 'tmpfs', 'the pod has a shared /dev/shm tmpfs');

    const addr = await inNamespaces({ net: pod.namespaces.net }, ['ip', '-4', '-o', 'addr', 'show', 'dev', 'eth0']);
    assert.match(addr, new RegExp(`inet ${ip.replaceAll('.', '\\.')}/`));
    const lo = await inNamespaces({ net: pod.namespaces.net }, ['ip', '-o', 'link', 'show', 'dev', 'lo']);
    assert.match(lo, /state UNKNOWN|UP/);
    assert.equal((await inNamespaces({ uts: pod.namespaces.uts }, ['hostname'])).trim(), 'web-0');
    assert.equal((await inNamespaces({ net: pod.namespaces.net }, ['cat', '/proc/sys/net/ipv4/ip_unprivileged_port_start'])).trim(), '80');

    assert.equal(
      readFileSync(pod.files.resolvConf, 'utf8'),
      'search skiff-test.svc.cluster.local cluster.local\nnameserver 10.96.0.10\nnameserver 1.1.1.1\noptions ndots:5\n',
    );
    assert.equal(readFileSync(pod.files.hostname, 'utf8'), 'web-0\n');
    assert.match(readFileSync(pod.files.hosts, 'utf8'), new RegExp(`^127\\.0\\.0\\.1\\tlocalhost$[\\s\\S]*^${ip.replaceAll('.', '\\.')}\\tweb-0$`, 'm'));

    // portmap DNATs both the host's own addresses and 127.0.0.1 (it sets route_localnet on the bridge).
    for (const host of ['127.0.0.1', ...(await hostAddress())]) {
      const server = serveOnceInNetns(pod.namespaces.net!, 8080, `hello-${host}`);
      try {
        await server.ready;
        assert.equal((await readFromPort(host, hostPort)).trim(), `hello-${host}`);
      } finally {
        server.stop();
      }
    }
    assert.ok((await natRulesMentioning(id)).length > 0, 'CNI NAT rules carry the pod id');
  });

  await t.test('StopPodSandbox is idempotent and releases the network; RemovePodSandbox leaves nothing behind', async () => {
    const id = await run(podConfig('stopper', { portMappings: [{ containerPort: 80, hostPort: await freePort() }] }));
    const pod = await info(d, id);
    const ip = (await d.runtime.podSandboxStatus({ podSandboxId: id })).status!.network!.ip;
    const veth = pod.network!.result!.interfaces!.find((i) => !i.sandbox && i.name !== net.bridge)!.name;
    assert.ok(await linkExists(veth), `host veth ${veth} exists while the pod is ready`);
    assert.ok(existsSync(join(net.ipamDir, net.name, ip)), 'host-local recorded the address');

    await d.runtime.stopPodSandbox({ podSandboxId: id });
    await d.runtime.stopPodSandbox({ podSandboxId: id });
    const { status } = await d.runtime.podSandboxStatus({ podSandboxId: id });
    assert.equal(status!.state, PodSandboxState.SANDBOX_NOTREADY);
    assert.equal(status!.network!.ip, '');
    assert.equal(await linkExists(veth), false, 'veth gone after stop');
    assert.equal(existsSync(join(net.ipamDir, net.name, ip)), false, 'address released after stop');
    assert.deepEqual(await natRulesMentioning(id), [], 'no NAT rule of the pod after stop');

    await d.runtime.removePodSandbox({ podSandboxId: id });
    await d.runtime.removePodSandbox({ podSandboxId: id });
    assert.equal((await grpcCode(d.runtime.podSandboxStatus({ podSandboxId: id }))).code, Status.NOT_FOUND);
    for (const kind of ['net', 'ipc', 'uts'] as const) assert.equal(existsSync(pod.namespaces[kind]!), false, `${kind} file removed`);
    assert.equal(mountTypeAt(pod.files.shm!), undefined, 'shm tmpfs unmounted');
    assert.equal(nsfsMountsUnder(join(d.state, 'pods', id)).length, 0, 'no namespace mount left');
    assert.equal(existsSync(join(d.root, 'pods', id)), false, 'pod record dir removed');
    assert.equal(existsSync(join(d.state, 'pods', id)), false, 'pod state dir removed');
  });

  await t.test('RemovePodSandbox on a ready pod stops it first', async () => {
    const id = await run(podConfig('direct-remove'));
    const pod = await info(d, id);
    const ip = (await d.runtime.podSandboxStatus({ podSandboxId: id })).status!.network!.ip;
    await d.runtime.removePodSandbox({ podSandboxId: id });
    assert.equal(existsSync(join(net.ipamDir, net.name, ip)), false);
    assert.equal(existsSync(pod.namespaces.net!), false);
    assert.deepEqual(await natRulesMentioning(id), []);
  });

  await t.test('ListPodSandbox filters by id prefix, state and labels', async () => {
    const a = await run(podConfig('list-a', { labels: { group: 'list', which: 'a' } }));
    const b = await run(podConfig('list-b', { labels: { group: 'list', which: 'b' } }));
    await d.runtime.stopPodSandbox({ podSandboxId: b });
    const ids = async (filter: object) => (await d.runtime.listPodSandbox({ filter })).items.map((p) => p.id).filter((id) => id === a || id === b);

    assert.deepEqual(await ids({}), [a, b]);
    assert.deepEqual(await ids({ labelSelector: { group: 'list' } }), [a, b]);
    assert.deepEqual(await ids({ labelSelector: { group: 'list', which: 'b' } }), [b]);
    assert.deepEqual(await ids({ labelSelector: { group: 'nope' } }), []);
    assert.deepEqual(await ids({ state: { state: PodSandboxState.SANDBOX_READY } }), [a]);
    assert.deepEqual(await ids({ state: { state: PodSandboxState.SANDBOX_NOTREADY } }), [b]);
    assert.deepEqual(await ids({ id: a.slice(0, 12) }), [a]);
    assert.deepEqual(await ids({ id: b, state: { state: PodSandboxState.SANDBOX_READY } }), []);
    const item = (await d.runtime.listPodSandbox({ filter: { id: a } })).items[0];
    assert.equal(item.metadata!.name, 'list-a');
    assert.equal(item.metadata!.namespace, 'skiff-test');
    assert.ok(item.createdAt > 0n);
  });

  await t.test('PodSandboxStats reports the pod network counters', async () => {
    const id = await run(podConfig('stats', { labels: { stats: 'yes' } }));
    const pod = await info(d, id);
    // Some traffic out of eth0 so tx counters move.
    await inNamespaces({ net: pod.namespaces.net }, ['busybox', 'ping', '-c', '1', '-W', '1', net.subnet.replace(/0\/24$/, '1')]).catch(() => {});
    const { stats } = await d.runtime.podSandboxStats({ podSandboxId: id });
    assert.equal(stats!.attributes!.id, id);
    assert.equal(stats!.linux!.network!.defaultInterface!.name, 'eth0');
    assert.ok(stats!.linux!.network!.defaultInterface!.txBytes!.value > 0n, 'eth0 has sent bytes');
    const listed = await d.runtime.listPodSandboxStats({ filter: { labelSelector: { stats: 'yes' } } });
    assert.deepEqual(
      listed.stats.map((s) => s.attributes!.id),
      [id],
    );
    assert.equal((await grpcCode(d.runtime.podSandboxStats({ podSandboxId: 'f'.repeat(64) }))).code, Status.NOT_FOUND);
    // A pod on the node's network (here with a PID namespace of its own, so a pod init runs) has no
    // network of its own: the host's counters are not the pod's
    // (the kubelet would show the node's traffic as the pod's in /stats/summary).
    const host = await run(podConfig('stats-host', { network: NamespaceMode.NODE, pid: NamespaceMode.POD }));
    const hostStats = (await d.runtime.podSandboxStats({ podSandboxId: host })).stats!;
    assert.equal(hostStats.attributes!.id, host);
    assert.equal(
      hostStats.linux!.network,
      undefined,
      `no network stats: ${JSON.stringify(hostStats.linux!.network, (_k, v) => (typeof v === 'bigint' ? String(v) : v))}`,
    );
  });

  await t.test("a pod without a hostname on its own network takes the node's hostname", async () => {
    const id = await run(podConfig('nameless', { hostname: '' }));
    const pod = await info(d, id);
    assert.equal(pod.hostname, nodeHostname());
    assert.equal((await inNamespaces({ uts: pod.namespaces.uts }, ['hostname'])).trim(), nodeHostname());
    assert.equal(readFileSync(pod.files.hostname, 'utf8'), `${nodeHostname()}\n`);
  });

  await t.test("UpdatePodSandboxResources sets the pod cgroup to the containers' totals plus the overhead", async () => {
    const id = await run(podConfig('resized'));
    const pod = await info(d, id);
    const mib = 1024n * 1024n;
    const none = LinuxContainerResources.fromPartial({});
    await d.runtime.updatePodSandboxResources({
      podSandboxId: id,
      resources: { ...none, cpuShares: 512n, cpuQuota: 50_000n, cpuPeriod: 100_000n, memoryLimitInBytes: 256n * mib },
      overhead: { ...none, cpuQuota: 10_000n, memoryLimitInBytes: 16n * mib },
    });
    const read = (controller: string, v1: string, v2: string) => {
      const dir = controllerDir(controller, pod.cgroupParent)!;
      return existsSync(join(dir, v2)) ? readFileSync(join(dir, v2), 'utf8').trim() : readFileSync(join(dir, v1), 'utf8').trim();
    };
    assert.equal(read('memory', 'memory.limit_in_bytes', 'memory.max'), String(272n * mib));
    const cpuMax = read('cpu', 'cpu.cfs_quota_us', 'cpu.max');
    assert.ok(cpuMax === '60000' || cpuMax === '60000 100000', `cpu quota ${cpuMax}`);
    const weight = read('cpu', 'cpu.shares', 'cpu.weight');
    assert.ok(weight === '512' || weight === String(1 + Math.floor(((512 - 2) * 9999) / 262142)), `cpu weight ${weight}`);

    assert.equal((await grpcCode(d.runtime.updatePodSandboxResources({ podSandboxId: 'e'.repeat(64), resources: none }))).code, Status.NOT_FOUND);
    assert.equal((await grpcCode(d.runtime.updatePodSandboxResources({ podSandboxId: id }))).code, Status.INVALID_ARGUMENT);
    await d.runtime.stopPodSandbox({ podSandboxId: id });
    assert.equal((await grpcCode(d.runtime.updatePodSandboxResources({ podSandboxId: id, resources: none }))).code, Status.FAILED_PRECONDITION);
  });

  await t.test('errors: unknown ids, invalid configs, duplicate names', async () => {
    const unknown = 'e'.repeat(64);
    assert.equal((await grpcCode(d.runtime.podSandboxStatus({ podSandboxId: unknown }))).code, Status.NOT_FOUND);
    await d.runtime.stopPodSandbox({ podSandboxId: unknown });
    await d.runtime.removePodSandbox({ podSandboxId: unknown });

    const noConfig = await grpcCode(d.runtime.runPodSandbox({}));
    assert.equal(noConfig.code, Status.INVALID_ARGUMENT);
    assert.match(noConfig.details, /config is required/);
    const noMetadata = await grpcCode(d.runtime.runPodSandbox({ config: { ...podConfig('x'), metadata: undefined } }));
    assert.equal(noMetadata.code, Status.INVALID_ARGUMENT);
    assert.match(noMetadata.details, /config\.metadata/);
    const noUid = await grpcCode(d.runtime.runPodSandbox({ config: { ...podConfig('x'), metadata: { name: 'x', namespace: 'n' } } }));
    assert.match(noUid.details, /config\.metadata\.uid/);
    const badHost = await grpcCode(d.runtime.runPodSandbox({ config: podConfig('x', { hostname: 'not a hostname!' }) }));
    assert.equal(badHost.code, Status.INVALID_ARGUMENT);
    assert.match(badHost.details, /config\.hostname/);
    const badSysctl = await grpcCode(d.runtime.runPodSandbox({ config: podConfig('x', { sysctls: { 'kernel.panic': '1' } }) }));
    assert.equal(badSysctl.code, Status.INVALID_ARGUMENT);
    assert.match(badSysctl.details, /kernel\.panic/);
    const badPort = await grpcCode(d.runtime.runPodSandbox({ config: podConfig('x', { portMappings: [{ containerPort: 0, hostPort: 8080 }] }) }));
    assert.match(badPort.details, /config\.port_mappings\[0\]\.container_port/);
    const badHandler = await grpcCode(d.runtime.runPodSandbox({ config: podConfig('x'), runtimeHandler: 'kata' }));
    assert.equal(badHandler.code, Status.INVALID_ARGUMENT);
    assert.match(badHandler.details, /runtime_handler "kata"/);

    const config = podConfig('twin');
    await run(config);
    const twin = await grpcCode(d.runtime.runPodSandbox({ config }));
    assert.equal(twin.code, Status.ALREADY_EXISTS);
    // Failed runs leave no pod behind.
    assert.deepEqual(readdirSync(join(d.root, 'pods')).sort(), [...created].filter((id) => existsSync(join(d.root, 'pods', id))).sort());
  });

  await t.test('concurrent stop and remove of one pod are serialized', async () => {
    const id = await run(podConfig('racy'));
    await Promise.all([
      d.runtime.stopPodSandbox({ podSandboxId: id }),
      d.runtime.removePodSandbox({ podSandboxId: id }),
      d.runtime.stopPodSandbox({ podSandboxId: id }),
      d.runtime.removePodSandbox({ podSandboxId: id }),
    ]);
    assert.equal((await grpcCode(d.runtime.podSandboxStatus({ podSandboxId: id }))).code, Status.NOT_FOUND);
    assert.equal(nsfsMountsUnder(join(d.state, 'pods', id)).length, 0);
  });
});
