// Pod modes (shared PID namespace with catatonit, node network, node IPC/PID) and restart safety:
// skiffd killed with SIGKILL finds every pod in its true state, undoes a RunPodSandbox it never
// finished (CNI DEL, namespaces, catatonit), and a fresh machine gets a default network.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { hostname as nodeHostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Status } from 'nice-grpc';
import { NamespaceMode, PodSandboxState } from '../../proto/gen/runtime/v1/api.ts';
import { Cni, resultIps } from '../../node/skiffd/network/cni.ts';
import { pinNamespaces } from '../../node/skiffd/pods/namespaces.ts';
import { pidInitAlive, startPidInit } from '../../node/skiffd/pods/pid-init.ts';
import { writeJsonAtomic } from '../../node/skiffd/util/atomic-file.ts';
import { needs } from '../support/prereq.ts';
import { startSkiffd, type SkiffdHandle } from '../support/skiffd.ts';
import { createTestNetwork, inNamespaces, linkExists, natRulesMentioning, nsfsMountsUnder, skiffdNetworkConfig } from '../support/netns.ts';
import { grpcCode, podConfig, type PodInfo } from '../support/pods.ts';

const PREREQS = { root: true, commands: ['unshare', 'nsenter', 'umount', 'ip', 'iptables-save', 'catatonit', '/usr/lib/cni/bridge'] };

async function info(d: SkiffdHandle, id: string): Promise<PodInfo> {
  return JSON.parse((await d.runtime.podSandboxStatus({ podSandboxId: id, verbose: true })).info.info) as PodInfo;
}

async function state(d: SkiffdHandle, id: string): Promise<PodSandboxState | undefined> {
  return (await d.runtime.podSandboxStatus({ podSandboxId: id })).status?.state;
}

function procStat(pid: number): { state: string; startTime: string } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: f[0], startTime: f[19] };
  } catch {
    return undefined;
  }
}

const alive = (pid: number) => {
  const s = procStat(pid);
  return !!s && s.state !== 'Z';
};

async function waitUntil(what: string, check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('pod modes and restart safety', { timeout: 150_000 }, async (t) => {
  if (!needs(t, PREREQS)) return;
  const dir = mkdtempSync(join(tmpdir(), 'skiff-pods-restart-'));
  const net = createTestNetwork(dir);
  const config = skiffdNetworkConfig(net);
  let d = await startSkiffd({ config });
  const first = d;
  const created = new Set<string>();
  t.after(async () => {
    for (const id of created) await d.runtime.removePodSandbox({ podSandboxId: id }).catch(() => {});
    await d.cleanup();
    await first.cleanup();
    await net.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });
  const run = async (cfg: ReturnType<typeof podConfig>) => {
    const { podSandboxId } = await d.runtime.runPodSandbox({ config: cfg });
    created.add(podSandboxId);
    return podSandboxId;
  };
  const restart = async () => {
    const exit = await d.stop('SIGKILL');
    assert.equal(exit.signal, 'SIGKILL');
    d = await startSkiffd({ config, dir: first.dir });
  };

  let shared = '';
  let sharedInit = 0;
  await t.test('shared PID namespace: catatonit is PID 1 of the pod, in the pod netns', async () => {
    shared = await run(podConfig('shared-pid', { pid: NamespaceMode.POD }));
    const pod = await info(d, shared);
    sharedInit = pod.pid;
    assert.ok(sharedInit > 0);
    assert.equal(pod.namespaces.pid, `/proc/${sharedInit}/ns/pid`);
    assert.equal(readFileSync(`/proc/${sharedInit}/comm`, 'utf8').trim(), 'catatonit');
    const nspid = /^NSpid:\s+(.*)$/m
      .exec(readFileSync(`/proc/${sharedInit}/status`, 'utf8'))![1]
      .trim()
      .split(/\s+/);
    assert.deepEqual(nspid.slice(1), ['1'], 'PID 1 in its own PID namespace');
    // A process joining through the path sees catatonit as PID 1.
    const ps = await inNamespaces({ pid: pod.namespaces.pid }, ['unshare', '--fork', '--mount-proc', '--mount', 'busybox', 'ps', '-o', 'pid,comm']);
    assert.match(ps, /^\s*1\s+catatonit$/m);
    const inode = (path: string) =>
      readFileSync('/proc/self/mountinfo', 'utf8')
        .split('\n')
        .find((l) => l.split(' ')[4] === path)!
        .split(' ')[3];
    assert.equal(inode(pod.namespaces.net!), `net:[${readlink(`/proc/${sharedInit}/ns/net`)}]`, 'catatonit runs in the pod netns');
    assert.notEqual(readlink(`/proc/${sharedInit}/ns/pid`), readlink('/proc/self/ns/pid'));
  });

  let hostNet = '';
  await t.test('node network, node IPC and node PID', async () => {
    hostNet = await run(podConfig('hostnet', { hostname: '', network: NamespaceMode.NODE, ipc: NamespaceMode.NODE, pid: NamespaceMode.NODE }));
    const { status } = await d.runtime.podSandboxStatus({ podSandboxId: hostNet });
    assert.equal(status!.state, PodSandboxState.SANDBOX_READY);
    assert.equal(status!.network!.ip, '');
    assert.equal(status!.linux!.namespaces!.options!.network, NamespaceMode.NODE);
    assert.equal(status!.linux!.namespaces!.options!.pid, NamespaceMode.NODE);
    const pod = await info(d, hostNet);
    assert.deepEqual(pod.namespaces, {}, 'no namespace of its own');
    assert.equal(pod.network, null, 'no CNI for node-network pods');
    assert.equal(nsfsMountsUnder(join(d.state, 'pods', hostNet)).length, 0);
    assert.equal(pod.files.shm, null, 'host IPC pods use the host /dev/shm');
    assert.equal(readFileSync(pod.files.hostname, 'utf8'), `${nodeHostname()}\n`);
    assert.equal(readFileSync(pod.files.resolvConf, 'utf8'), readFileSync('/etc/resolv.conf', 'utf8'));
    assert.equal(readFileSync(pod.files.hosts, 'utf8'), readFileSync('/etc/hosts', 'utf8'));
  });

  await t.test('after kill -9 and restart every pod is found in its true state', async () => {
    const stopped = await run(podConfig('stopped'));
    await d.runtime.stopPodSandbox({ podSandboxId: stopped });
    const doomed = await run(podConfig('doomed-init', { pid: NamespaceMode.POD }));
    const doomedInfo = await info(d, doomed);
    const doomedIp = (await d.runtime.podSandboxStatus({ podSandboxId: doomed })).status!.network!.ip;
    const plain = await run(podConfig('plain'));
    const plainIp = (await d.runtime.podSandboxStatus({ podSandboxId: plain })).status!.network!.ip;

    await d.stop('SIGKILL');
    assert.ok(alive(sharedInit), 'catatonit survives the daemon');
    process.kill(doomedInfo.pid, 'SIGKILL'); // the init of one pod dies while skiffd is down
    await waitUntil('the killed catatonit to exit', () => !alive(doomedInfo.pid));
    d = await startSkiffd({ config, dir: first.dir });

    assert.equal(await state(d, shared), PodSandboxState.SANDBOX_READY);
    assert.equal((await info(d, shared)).pid, sharedInit, 'the same catatonit is adopted');
    assert.equal(await state(d, hostNet), PodSandboxState.SANDBOX_READY);
    assert.equal(await state(d, plain), PodSandboxState.SANDBOX_READY);
    assert.equal((await d.runtime.podSandboxStatus({ podSandboxId: plain })).status!.network!.ip, plainIp);
    assert.equal(await state(d, stopped), PodSandboxState.SANDBOX_NOTREADY);
    assert.equal(await state(d, doomed), PodSandboxState.SANDBOX_NOTREADY, 'a pod whose PID-namespace init died is NOTREADY');
    assert.match(d.logs(), /PID namespace init \(catatonit\)/);

    // Stopping after the restart still releases what was set up before it.
    await d.runtime.stopPodSandbox({ podSandboxId: doomed });
    assert.equal(existsSync(join(net.ipamDir, net.name, doomedIp)), false);
    await d.runtime.stopPodSandbox({ podSandboxId: shared });
    await waitUntil('catatonit to exit after StopPodSandbox', () => !alive(sharedInit));
    assert.equal(await state(d, shared), PodSandboxState.SANDBOX_NOTREADY);
  });

  await t.test('a StopPodSandbox cut short by a crash is finished by the next stop', async () => {
    const id = await run(podConfig('half-stopped'));
    const ip = (await d.runtime.podSandboxStatus({ podSandboxId: id })).status!.network!.ip;
    await d.stop('SIGKILL');
    // Exactly what a daemon dying right after Stop's first step (recording NOTREADY) leaves on disk.
    const recordFile = join(d.root, 'pods', id, 'pod.json');
    const record = JSON.parse(readFileSync(recordFile, 'utf8'));
    record.record.state = 'SANDBOX_NOTREADY';
    writeFileSync(recordFile, JSON.stringify(record));
    d = await startSkiffd({ config, dir: first.dir });
    assert.equal(await state(d, id), PodSandboxState.SANDBOX_NOTREADY);
    assert.ok(existsSync(join(net.ipamDir, net.name, ip)), 'the address is still held');
    await d.runtime.stopPodSandbox({ podSandboxId: id });
    assert.equal(existsSync(join(net.ipamDir, net.name, ip)), false, 'the next stop released it');
    assert.deepEqual(await natRulesMentioning(id), []);
  });

  await t.test('a RunPodSandbox cut short by a crash is undone at restart (CNI DEL, namespaces, catatonit)', async () => {
    await d.stop('SIGKILL');
    // Rebuild exactly what a daemon dying between CNI ADD and writing the record leaves behind.
    const id = randomBytes(32).toString('hex');
    const recordDir = join(d.root, 'pods', id);
    mkdirSync(recordDir, { recursive: true });
    const pins = await pinNamespaces(join(d.state, 'pods', id, 'ns'), { net: true, ipc: true, uts: true, hostname: 'half-done' });
    const cni = new Cni({ confDir: net.confDir, binDirs: ['/usr/lib/cni'] });
    const attachment = await cni.prepare(id, pins.net!, {}, {});
    await writeJsonAtomic(join(recordDir, 'network.json'), attachment);
    const result = await cni.add(attachment);
    const { ip } = resultIps(result);
    const veth = result.interfaces!.find((i) => !i.sandbox && i.name !== net.bridge)!.name;
    const init = await startPidInit(id, pins);
    assert.ok(existsSync(join(net.ipamDir, net.name, ip)) && (await linkExists(veth)) && (await pidInitAlive(init)));

    d = await startSkiffd({ config, dir: first.dir });
    assert.equal((await grpcCode(d.runtime.podSandboxStatus({ podSandboxId: id }))).code, Status.NOT_FOUND);
    assert.equal(existsSync(recordDir), false, 'record dir removed');
    assert.equal(existsSync(join(d.state, 'pods', id)), false, 'namespace dir removed');
    assert.equal(nsfsMountsUnder(join(d.state, 'pods', id)).length, 0, 'namespaces unmounted');
    assert.equal(existsSync(join(net.ipamDir, net.name, ip)), false, 'address released (CNI DEL ran)');
    assert.equal(await linkExists(veth), false, 'veth removed');
    assert.deepEqual(await natRulesMentioning(id), []);
    await waitUntil('the orphaned catatonit to be killed', () => !alive(init.pid));
    assert.match(d.logs(), /unfinished RunPodSandbox/);
  });

  await t.test('kill -9 in the middle of RunPodSandbox: after restart the pod is either whole or gone', async (t) => {
    for (const delayMs of [5, 25, 60]) {
      const call = d.runtime.runPodSandbox({ config: podConfig(`crash-${delayMs}`, { pid: NamespaceMode.POD }) }).then(
        (r) => r.podSandboxId,
        () => undefined,
      );
      await new Promise((r) => setTimeout(r, delayMs));
      await restart();
      const answered = await call;
      const pods = (await d.runtime.listPodSandbox({ filter: { labelSelector: {} } })).items.filter((p) => p.metadata!.name === `crash-${delayMs}`);
      if (answered) assert.equal(pods.length, 1, 'a pod the client got an id for survives');
      const undone = /unfinished RunPodSandbox/.test(d.logs());
      t.diagnostic(
        `kill after ${delayMs} ms: ${answered ? 'call had answered' : 'no answer'}, ${pods.length} pod(s) after restart${undone ? ', a half-made pod was undone' : ''}`,
      );
      for (const p of pods) {
        created.add(p.id);
        assert.equal(p.state, PodSandboxState.SANDBOX_READY);
        const pod = await info(d, p.id);
        assert.ok(alive(pod.pid));
        assert.equal(nsfsMountsUnder(join(d.state, 'pods', p.id)).length, 3);
      }
      // Nothing of an undone attempt is left: every namespace mount and address belongs to a listed pod.
      const listed = new Set((await d.runtime.listPodSandbox({})).items.map((p) => p.id));
      for (const mount of nsfsMountsUnder(join(d.state, 'pods'))) {
        assert.ok(listed.has(mount.split('/').at(-3)!), `namespace mount ${mount} belongs to a pod`);
      }
      for (const id of readdirSync(join(d.root, 'pods'))) assert.ok(listed.has(id), `record dir ${id} belongs to a pod`);
      const addresses = readdirSync(join(net.ipamDir, net.name)).filter((f) => /^\d+\.\d+\.\d+\.\d+$/.test(f));
      const ips = new Set<string>();
      for (const id of listed) {
        const ip = (await d.runtime.podSandboxStatus({ podSandboxId: id })).status!.network!.ip;
        if (ip) ips.add(ip);
      }
      assert.deepEqual(addresses.sort(), [...ips].sort(), 'allocated addresses = addresses of ready pods');
    }
  });

  await t.test('everything is removable after the restarts', async () => {
    for (const id of created) await d.runtime.removePodSandbox({ podSandboxId: id });
    assert.deepEqual((await d.runtime.listPodSandbox({})).items, []);
    assert.deepEqual(nsfsMountsUnder(d.dir), []);
    created.clear();
  });
});

/** The inode number in a namespace link (`net:[4026532179]` -> `4026532179`). */
function readlink(path: string): string {
  return /\[(\d+)\]/.exec(readlinkSync(path))![1];
}

test('a fresh machine gets the default network; missing plugins make NetworkReady false', { timeout: 60_000 }, async (t) => {
  if (!needs(t, PREREQS)) return;
  const dir = mkdtempSync(join(tmpdir(), 'skiff-pods-default-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));

  const confDir = join(dir, 'net.d');
  const fresh = await startSkiffd({ config: `[cni]\nconf_dir = ${JSON.stringify(confDir)}\n` });
  try {
    const conf = JSON.parse(readFileSync(join(confDir, '10-skiff.conflist'), 'utf8'));
    assert.deepEqual(
      conf.plugins.map((p: { type: string }) => p.type),
      ['bridge', 'portmap', 'loopback'],
    );
    assert.equal(conf.plugins[0].bridge, 'skiff0');
    assert.equal(conf.plugins[0].ipam.type, 'host-local');
    assert.equal(conf.plugins[0].ipam.ranges[0][0].subnet, '10.88.0.0/16');
    assert.deepEqual(conf.plugins[1].capabilities, { portMappings: true });
    const network = (await fresh.runtime.status({})).status!.conditions.find((c) => c.type === 'NetworkReady')!;
    assert.equal(network.status, true, JSON.stringify(network));
  } finally {
    await fresh.cleanup();
  }

  // A network whose plugin binaries are missing: NetworkReady false, and RunPodSandbox says why.
  const emptyBin = join(dir, 'no-plugins');
  mkdirSync(emptyBin);
  const broken = await startSkiffd({ config: `[cni]\nconf_dir = ${JSON.stringify(confDir)}\nbin_dir = ${JSON.stringify(emptyBin)}\n` });
  try {
    const network = (await broken.runtime.status({})).status!.conditions.find((c) => c.type === 'NetworkReady')!;
    assert.equal(network.status, false);
    assert.equal(network.reason, 'NetworkPluginNotReady');
    const err = await grpcCode(broken.runtime.runPodSandbox({ config: podConfig('no-net') }));
    assert.equal(err.code, Status.FAILED_PRECONDITION);
    assert.match(err.details, /CNI plugins? "bridge".*not found in /);
    assert.deepEqual((await broken.runtime.listPodSandbox({})).items, []);
    assert.deepEqual(readdirSync(join(broken.root, 'pods')), [], 'the failed pod left no record');
    assert.deepEqual(nsfsMountsUnder(broken.dir), [], 'nor pinned namespaces');
  } finally {
    await broken.cleanup();
  }
});
