// The kubelet 1.36 runs its pods on skiffd (dist/skiffd.cjs, as a node installs it): probes, restarts and
// back-off, exit reasons, init containers, shared volumes and localhost, host namespaces, resources in the
// cgroups, and deletion leaving nothing behind. Static pods drive it; results come from the kubelet's
// read-only API, the CRI log files and the host's cgroup and proc files. One kubelet runs every pod of
// this file at once; each subtest waits for its own pod.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { build } from '../../scripts/build-skiffd.mjs';
import { startKubeletNode, KIT_IMAGES, type KubeletNode } from '../support/kubelet.ts';
import { containerStatus, isReady, condition, type KubePod } from '../support/kube-types.ts';
import { container, emptyDir, execProbe, httpProbe, livenessUntilFile, pod } from '../support/kube-manifests.ts';
import { cgroupValue, containerInfo, execIn, namespaceOf, processCgroup, runtimeId } from '../support/kube-host-reads.ts';
import { defaultRouteAddress, freePort } from '../support/netns.ts';
import { until } from '../support/wait.ts';
import { deletionSnapshot, leftoversOf, type DeletionSnapshot } from '../support/kube-leftovers.ts';

const running = (p: KubePod, c: string) => !!containerStatus(p, c)?.state.running;
/** Seconds the container has been running, by the kubelet's clock. */
const runningFor = (p: KubePod, c: string) => {
  const at = containerStatus(p, c)?.state.running?.startedAt;
  return at ? (Date.now() - Date.parse(at)) / 1000 : -1;
};

test('kubelet 1.36 runs its pods on skiffd', { timeout: 30 * 60_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-kubelet-pods-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const built = await build({ outdir: join(dir, 'dist'), sea: false, quiet: true });
  // A container in back-off shows "waiting: CrashLoopBackOff" only from the kubelet's next sync of its pod
  // after the sync that hit the back-off, and that next sync is the periodic one (syncFrequency, 1 min by
  // default, jittered to 1.5 min) when nothing else wakes the pod: longer than the back-off itself, so the
  // state can be skipped entirely. Every back-off here (10 s and up) holds a 5 s sync.
  const node = await startKubeletNode(t, { skiffdCommand: [process.execPath, built.cjs], kubeletConfig: { syncFrequency: '5s' } });
  if (!node) return;
  t.after(() => node.cleanup());
  const hostPort = await freePort();
  const mappedPort = await freePort();
  const names = writePods(node, hostPort, mappedPort);

  await t.test('readiness: an HTTP probe makes a pod Ready; a probe on a closed port never does', async () => {
    await node.waitForPod(names.probeHttp, 'the probed container ready', (p) => containerStatus(p, 'web')?.ready);
    // Five probe periods of running without a listener on the probed port: never ready.
    const notReady = await node.waitForPod(names.probeHttp, 'the closed-port container running 5 s', (p) => runningFor(p, 'closed') >= 5 && p);
    assert.equal(containerStatus(notReady, 'closed')?.ready, false);
    assert.equal(condition(notReady, 'ContainersReady'), false);
  });

  await t.test('readiness: an exec probe follows a file the container has or not', async () => {
    const before = await node.waitForPod(names.probeExec, 'running 3 s', (p) => runningFor(p, 'app') >= 3 && p);
    assert.equal(containerStatus(before, 'app')?.ready, false, 'not ready before /tmp/ready exists');
    await execIn(node, before, 'app', ['touch', '/tmp/ready']);
    const ready = await node.waitForPod(names.probeExec, 'Ready after /tmp/ready appears', isReady);
    await execIn(node, ready, 'app', ['rm', '/tmp/ready']);
    const after = await node.waitForPod(names.probeExec, 'not Ready after /tmp/ready goes', (p) => !condition(p, 'Ready') && p);
    assert.equal(containerStatus(after, 'app')?.restartCount, 0, 'readiness never restarts');
  });

  await t.test('liveness: a failing exec probe restarts the container; its first log stays', async () => {
    const live = await node.waitForPod(names.liveness, 'running', (p) => running(p, 'app') && p);
    assert.equal(containerStatus(live, 'app')?.restartCount, 0);
    await execIn(node, live, 'app', ['touch', '/tmp/unhealthy']);
    const restarted = await node.waitForPod(names.liveness, 'restarted once and running', (p) => {
      const c = containerStatus(p, 'app');
      return c?.restartCount === 1 && c.state.running && p;
    });
    const last = containerStatus(restarted, 'app')!.lastState.terminated;
    assert.ok(last, 'lastState holds the killed container');
    assert.equal(last.reason, 'Error');
    assert.ok([137, 143].includes(last.exitCode), `killed by a signal, exit ${last.exitCode}`);
    assert.deepEqual(node.logLines(names.liveness, 'app', 0), ['attempt']);
    await until('the second attempt to log', () => node.logLines(names.liveness, 'app', 1).includes('attempt'), 60_000);
  });

  await t.test('restartPolicy Always: exit 3 crash-loops with back-off (10 s, then 20 s) and reason Error', async () => {
    let sawBackOff = false;
    const p = await node.waitForPod(
      names.crash,
      'restartCount 3',
      (p) => {
        const c = containerStatus(p, 'crash');
        if (c?.state.waiting?.reason === 'CrashLoopBackOff') sawBackOff = true;
        return (c?.restartCount ?? 0) >= 3 && p;
      },
      150_000,
    );
    const c = containerStatus(p, 'crash')!;
    assert.equal(c.lastState.terminated?.exitCode, 3);
    assert.equal(c.lastState.terminated?.reason, 'Error');
    await node.waitForPod(names.crash, 'CrashLoopBackOff', (p) => (sawBackOff ||= containerStatus(p, 'crash')?.state.waiting?.reason === 'CrashLoopBackOff'));
    // Each attempt appends its start time to an emptyDir and prints them all. The kubelet removes the logs
    // of older attempts with their containers: read the newest.
    const dir = dirname(node.logPath(names.crash, 'crash', 0));
    const lines = await until(
      'an attempt after the third restart to log',
      () => {
        const newest = Math.max(
          ...readdirSync(dir)
            .map((f) => Number.parseInt(f, 10))
            .filter(Number.isFinite),
        );
        const l = newest >= 3 ? node.logLines(names.crash, 'crash', newest) : [];
        return l.length >= 4 && l;
      },
      60_000,
    ).catch((err: Error) => {
      const files = readdirSync(dir).map((f) => `${f}: ${JSON.stringify(readFileSync(join(dir, f), 'utf8'))}`);
      throw new Error(`${err.message}\n${files.join('\n')}`);
    });
    const starts = lines.slice(0, 4).map(Number);
    const gaps = starts.slice(1).map((s, i) => s - starts[i]);
    assert.ok(gaps[0] < gaps[1] && gaps[0] <= 8, `the first restart is immediate (gaps ${gaps})`);
    assert.ok(gaps[1] >= 8, `then 10 s of back-off (gaps ${gaps})`);
    assert.ok(gaps[2] >= gaps[1] + 6, `then twice as long (gaps ${gaps})`);
  });

  await t.test('restartPolicy OnFailure: a failed container is restarted until it succeeds; the pod Succeeds', async () => {
    // The second attempt waits for a go from the test, so its lastState can be read while it runs.
    const second = await node.waitForPod(names.onFailure, 'the second attempt running', (p) => {
      const c = containerStatus(p, 'once');
      return c?.restartCount === 1 && c.state.running && p;
    });
    const c = containerStatus(second, 'once')!;
    assert.deepEqual([c.lastState.terminated?.exitCode, c.lastState.terminated?.reason], [1, 'Error']);
    assert.deepEqual(node.logLines(names.onFailure, 'once', 0), ['first']);
    await until('the second attempt to log', () => node.logLines(names.onFailure, 'once', 1).includes('second'), 60_000);
    await execIn(node, second, 'once', ['touch', '/data/go']);
    const done = await node.waitForPod(names.onFailure, 'phase Succeeded', (p) => p.status.phase === 'Succeeded' && p);
    const end = containerStatus(done, 'once')!;
    assert.deepEqual([end.state.terminated?.exitCode, end.state.terminated?.reason, end.restartCount], [0, 'Completed', 1]);
  });

  await t.test('restartPolicy Never: exit codes and reasons Completed, Error and OOMKilled; nothing restarts', async () => {
    const p = await node.waitForPod(names.never, 'phase Failed', (p) => p.status.phase === 'Failed' && p);
    const done = containerStatus(p, 'done')!;
    const fails = containerStatus(p, 'fails')!;
    assert.deepEqual([done.state.terminated?.exitCode, done.state.terminated?.reason, done.restartCount], [0, 'Completed', 0]);
    assert.deepEqual([fails.state.terminated?.exitCode, fails.state.terminated?.reason, fails.restartCount], [2, 'Error', 0]);
    // The termination message: the file the kubelet mounts at /dev/termination-log, or the log's tail.
    assert.equal(fails.state.terminated?.message?.trim(), 'bad thing');
    const fallback = containerStatus(p, 'fallback')!;
    assert.equal(fallback.state.terminated?.exitCode, 4);
    assert.equal(fallback.state.terminated?.message?.trim(), 'from-the-log');
    const oom = await node.waitForPod(names.oom, 'the memory hog to end', (p) => containerStatus(p, 'hog')?.state.terminated && p);
    const hog = containerStatus(oom, 'hog')!;
    assert.deepEqual([hog.state.terminated?.exitCode, hog.state.terminated?.reason], [137, 'OOMKilled']);
    assert.equal(oom.status.phase, 'Failed');
  });

  await t.test('init containers run in order to completion before the app, through a shared emptyDir', async () => {
    const p = await node.waitForPod(names.init, 'app running', (p) => running(p, 'app') && p);
    // The status names the image as the pod spec does, and its digest, as on a containerd node.
    const app = containerStatus(p, 'app')!;
    assert.equal(app.image, KIT_IMAGES.busybox);
    assert.match(app.imageID, /^registry\.k8s\.io\/e2e-test-images\/busybox@sha256:[0-9a-f]{64}$/);
    const [first, second] = ['first', 'second'].map((n) => containerStatus(p, n)!);
    for (const c of [first, second]) assert.deepEqual([c.state.terminated?.exitCode, c.state.terminated?.reason], [0, 'Completed']);
    assert.ok(Date.parse(second.state.terminated!.startedAt!) >= Date.parse(first.state.terminated!.finishedAt!), 'second starts after first ends');
    await until('the app to print what the init containers wrote', () => node.logLines(names.init, 'app').length >= 2, 60_000);
    assert.deepEqual(node.logLines(names.init, 'app'), ['first', 'second']);
  });

  await t.test('containers of a pod share an emptyDir and reach each other on localhost', async () => {
    await node.waitForPod(names.shared, 'Ready', isReady);
    const lines = await until(
      'the client to fetch from the server on localhost',
      () => {
        const l = node.logLines(names.shared, 'client');
        return l.includes('hello-localhost') && l;
      },
      60_000,
    );
    assert.ok(lines.includes('from-server'), `the client read the server's file: ${lines}`);
  });

  await t.test("hostNetwork: the pod serves on the host from the host's network namespace", async () => {
    const p = await node.waitForPod(names.hostNet, 'Ready', isReady);
    const body = await (await fetch(`http://127.0.0.1:${hostPort}/`, { signal: AbortSignal.timeout(10_000) })).text();
    assert.equal(body.trim(), 'hello-host');
    const { pid } = await containerInfo(node, runtimeId(p, 'web'));
    assert.equal(namespaceOf(pid, 'net'), namespaceOf('self', 'net'));
  });

  await t.test("hostPID: the container sees the host's PID 1; other pods have their own PID namespace", async () => {
    const p = await node.waitForPod(names.hostPid, 'running', (p) => running(p, 'app') && p);
    await until('the container to print /proc/1/comm', () => node.logLines(names.hostPid, 'app').length > 0, 60_000);
    assert.deepEqual(node.logLines(names.hostPid, 'app'), [readFileSync('/proc/1/comm', 'utf8').trim()]);
    const { pid } = await containerInfo(node, runtimeId(p, 'app'));
    assert.equal(namespaceOf(pid, 'pid'), namespaceOf('self', 'pid'));
    const other = await node.waitForPod(names.init, 'app running', (p) => running(p, 'app') && p);
    const otherPid = (await containerInfo(node, runtimeId(other, 'app'))).pid;
    assert.notEqual(namespaceOf(otherPid, 'pid'), namespaceOf('self', 'pid'));
  });

  await t.test('resources: requests and limits reach the container and pod cgroups as the kubelet computes them', async () => {
    const p = await node.waitForPod(names.resources, 'both containers running', (p) => running(p, 'a') && running(p, 'b') && p);
    assert.equal(p.status.qosClass, 'Burstable');
    const expected = {
      // shares = milliCPU * 1024 / 1000; quota = milliCPU * period / 1000; period 100 ms.
      a: { shares: '10', quota: '25000', memory: String(48 << 20) },
      b: { shares: '20', quota: '10000', memory: String(32 << 20) },
    };
    for (const [name, want] of Object.entries(expected)) {
      const { pid } = await containerInfo(node, runtimeId(p, name));
      const cpu = processCgroup(pid, 'cpu');
      const memory = processCgroup(pid, 'memory');
      assert.match(cpu, new RegExp(`^/kubepods/burstable/pod${p.metadata.uid}/`), 'under the pod cgroup the kubelet made');
      assert.equal(cgroupValue('cpu', cpu, 'cpu.shares'), want.shares, `${name} cpu.shares`);
      assert.equal(cgroupValue('cpu', cpu, 'cpu.cfs_period_us'), '100000', `${name} period`);
      assert.equal(cgroupValue('cpu', cpu, 'cpu.cfs_quota_us'), want.quota, `${name} quota`);
      assert.equal(cgroupValue('memory', memory, 'memory.limit_in_bytes'), want.memory, `${name} memory limit`);
    }
    // The pod cgroup carries the sums, written by the kubelet.
    const podCgroup = `/kubepods/burstable/pod${p.metadata.uid}`;
    assert.equal(cgroupValue('cpu', podCgroup, 'cpu.shares'), '30');
    assert.equal(cgroupValue('cpu', podCgroup, 'cpu.cfs_quota_us'), '35000');
    assert.equal(cgroupValue('memory', podCgroup, 'memory.limit_in_bytes'), String(80 << 20));
    // A pod with no requests is BestEffort: the minimum shares, under /kubepods/besteffort.
    const be = await node.waitForPod(names.hostPid, 'running', (p) => running(p, 'app') && p);
    assert.equal(be.status.qosClass, 'BestEffort');
    const bePid = (await containerInfo(node, runtimeId(be, 'app'))).pid;
    const beCpu = processCgroup(bePid, 'cpu');
    assert.match(beCpu, new RegExp(`^/kubepods/besteffort/pod${be.metadata.uid}/`));
    assert.equal(cgroupValue('cpu', beCpu, 'cpu.shares'), '2');
  });

  await t.test('what the kubelet adds: downward API pod IP, hostname and /etc/hosts, a host port, postStart, a shared PID namespace', async () => {
    const p = await node.waitForPod(names.extras, 'Ready', isReady);
    const ip = p.status.podIP!;
    assert.ok(ip?.startsWith(node.network.subnet.split('.').slice(0, 3).join('.')), `the pod has an IP of its network: ${ip}`);
    await until('main to print its IP and hostname', () => node.logLines(names.extras, 'main').length >= 2, 60_000);
    assert.deepEqual(node.logLines(names.extras, 'main'), [`ip=${ip}`, names.extras]);
    const hosts = await execIn(node, p, 'main', ['cat', '/etc/hosts']);
    assert.ok(
      hosts.split('\n').some((l) => l.split(/\s+/).join(' ') === `${ip} ${names.extras}`),
      `/etc/hosts names the pod:\n${hosts}`,
    );
    assert.equal((await execIn(node, p, 'main', ['cat', '/tmp/post-start'])).trim(), 'started');
    // A standalone kubelet knows no node IP: reach the host port on the host's own address.
    const hostAddress = defaultRouteAddress();
    assert.ok(hostAddress, 'this host has an IPv4 address');
    const body = await (await fetch(`http://${hostAddress}:${mappedPort}/`, { signal: AbortSignal.timeout(10_000) })).text();
    assert.equal(body.trim(), 'hello-hostport');
    const [main, peer] = await Promise.all(['main', 'peer'].map((c) => containerInfo(node, runtimeId(p, c))));
    assert.equal(namespaceOf(main.pid, 'pid'), namespaceOf(peer.pid, 'pid'), 'shareProcessNamespace: one PID namespace');
    assert.match(await execIn(node, p, 'main', ['ps']), /sleep 3600/, "main sees peer's process");
  });

  let snapshot: DeletionSnapshot | undefined;
  await t.test('deletion: removing a manifest stops the pod (preStop, then SIGTERM) and removes it, leaving nothing on the host', async () => {
    const p = await node.waitForPod(names.doomed, 'Ready', isReady);
    snapshot = await deletionSnapshot(node, p, ['one', 'two']);
    node.deletePod(names.doomed);
    await node.waitForPodGone(names.doomed);
    // The kubelet stops the sandbox at once and removes it in its next garbage collection (every minute).
    const left = await until(
      'the pod to leave nothing behind',
      async () => {
        const l = await leftoversOf(node, snapshot!);
        return l.length === 0 ? l : undefined;
      },
      150_000,
    ).catch(async (err: Error) => {
      throw new Error(`${err.message}; still there: ${(await leftoversOf(node, snapshot!)).join('; ')}`);
    });
    assert.deepEqual(left, []);
    assert.deepEqual(
      readFileSync(join(node.dir, 'doomed-host', 'events'), 'utf8')
        .split('\n')
        .filter(Boolean),
      ['pre-stop', 'term'],
    );
  });
});

/** Writes every pod of this file at once; returns their full names. */
function writePods(node: KubeletNode, hostPort: number, mappedPort: number) {
  const data = emptyDir('data', '/data');
  const shared = emptyDir('shared', '/shared');
  return {
    probeHttp: node.writePod(
      pod('probe-http', {
        containers: [
          container('web', { image: KIT_IMAGES.nginx, extra: { readinessProbe: httpProbe(80) } }),
          container('closed', { image: KIT_IMAGES.nginx, extra: { env: [{ name: 'PORT', value: '8081' }], readinessProbe: httpProbe(8082) } }),
        ],
      }),
    ),
    probeExec: node.writePod(
      pod('probe-exec', { containers: [container('app', { script: 'exec sleep 3600', extra: { readinessProbe: execProbe('cat /tmp/ready') } })] }),
    ),
    liveness: node.writePod(
      pod('liveness', {
        containers: [container('app', { script: 'echo attempt; exec sleep 3600', extra: { livenessProbe: livenessUntilFile('/tmp/unhealthy') } })],
      }),
    ),
    crash: node.writePod(
      pod('crash', {
        volumes: [data.volume],
        containers: [container('crash', { script: 'date +%s >> /data/starts; cat /data/starts; exit 3', extra: { volumeMounts: [data.mount] } })],
      }),
    ),
    onFailure: node.writePod(
      pod('on-failure', {
        restartPolicy: 'OnFailure',
        volumes: [data.volume],
        containers: [
          container('once', {
            script: 'if [ -f /data/once ]; then echo second; until [ -f /data/go ]; do sleep 0.2; done; exit 0; fi; touch /data/once; echo first; exit 1',
            extra: { volumeMounts: [data.mount] },
          }),
        ],
      }),
    ),
    never: node.writePod(
      pod('never', {
        restartPolicy: 'Never',
        containers: [
          container('done', { script: 'exit 0' }),
          container('fails', { script: 'echo "bad thing" > /dev/termination-log; exit 2' }),
          container('fallback', { script: 'echo from-the-log; exit 4', extra: { terminationMessagePolicy: 'FallbackToLogsOnError' } }),
        ],
      }),
    ),
    // dd's 64 MiB buffer does not fit in 16 MiB.
    oom: node.writePod(
      pod('oom', {
        restartPolicy: 'Never',
        containers: [
          container('hog', {
            script: 'exec dd if=/dev/zero of=/dev/null bs=64M count=1',
            resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '16Mi' } },
          }),
        ],
      }),
    ),
    init: node.writePod(
      pod('init', {
        volumes: [data.volume],
        initContainers: [
          container('first', { script: 'echo first >> /data/order', extra: { volumeMounts: [data.mount] } }),
          container('second', { script: 'echo second >> /data/order', extra: { volumeMounts: [data.mount] } }),
        ],
        containers: [container('app', { script: 'cat /data/order; exec sleep 3600', extra: { volumeMounts: [data.mount] } })],
      }),
    ),
    shared: node.writePod(
      pod('shared', {
        volumes: [shared.volume],
        containers: [
          container('server', {
            script: 'echo from-server > /shared/msg; mkdir -p /www; echo hello-localhost > /www/index.html; exec httpd -f -p 8080 -h /www',
            extra: { volumeMounts: [shared.mount], readinessProbe: httpProbe(8080) },
          }),
          container('client', {
            script:
              'until [ -f /shared/msg ]; do sleep 0.2; done; cat /shared/msg; until wget -qO- http://127.0.0.1:8080/; do sleep 0.5; done; exec sleep 3600',
            extra: { volumeMounts: [shared.mount] },
          }),
        ],
      }),
    ),
    hostNet: node.writePod(
      pod('host-net', {
        hostNetwork: true,
        containers: [
          container('web', {
            script: `mkdir -p /www; echo hello-host > /www/index.html; exec httpd -f -p 127.0.0.1:${hostPort} -h /www`,
            extra: { readinessProbe: { ...httpProbe(hostPort), httpGet: { path: '/', port: hostPort, host: '127.0.0.1' } } },
          }),
        ],
      }),
    ),
    hostPid: node.writePod(pod('host-pid', { hostPID: true, containers: [container('app', { script: 'cat /proc/1/comm; exec sleep 3600', resources: {} })] })),
    resources: node.writePod(
      pod('resources', {
        containers: [
          container('a', { script: 'exec sleep 3600', resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { cpu: '250m', memory: '48Mi' } } }),
          container('b', { script: 'exec sleep 3600', resources: { requests: { cpu: '20m' }, limits: { cpu: '100m', memory: '32Mi' } } }),
        ],
      }),
    ),
    extras: node.writePod(
      pod('extras', {
        shareProcessNamespace: true,
        containers: [
          container('main', {
            script: 'echo "ip=$MY_IP"; hostname; mkdir -p /www; echo hello-hostport > /www/index.html; exec httpd -f -p 8080 -h /www',
            extra: {
              env: [{ name: 'MY_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
              ports: [{ containerPort: 8080, hostPort: mappedPort }],
              lifecycle: { postStart: { exec: { command: ['sh', '-c', 'echo started > /tmp/post-start'] } } },
              readinessProbe: httpProbe(8080),
            },
          }),
          container('peer', { script: 'exec sleep 3600' }),
        ],
      }),
    ),
    doomed: node.writePod(
      pod('doomed', {
        volumes: [data.volume, { name: 'host', hostPath: { path: join(node.dir, 'doomed-host'), type: 'DirectoryOrCreate' } }],
        containers: [
          // Graceful termination: the preStop hook, then SIGTERM, each leave a line on the host.
          container('one', {
            script: "trap 'echo term >> /host/events; exit 0' TERM; while true; do sleep 0.2; done",
            extra: {
              volumeMounts: [data.mount, { name: 'host', mountPath: '/host' }],
              lifecycle: { preStop: { exec: { command: ['sh', '-c', 'echo pre-stop >> /host/events'] } } },
            },
          }),
          container('two', { script: 'exec sleep 3600', extra: { volumeMounts: [data.mount] } }),
        ],
      }),
    ),
  };
}
