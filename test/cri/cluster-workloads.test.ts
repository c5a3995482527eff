// skiffd as a node of a real cluster: the kit's kube-apiserver, controllers and scheduler, and its
// kubelet joined to them, drive skiffd; the test acts only through kubectl and reads the API, as a user
// does. Pods placed by the scheduler; logs; volumes the kubelet builds from API objects; Deployments,
// Jobs and DaemonSets; lifecycle as the API reports it; the node's status and stats; a crash of skiffd
// and a restart of the kubelet under running pods; and nothing left on the host once a namespace goes.
// Every manifest is applied up front so the pods start together; each subtest waits for its own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpus } from 'node:os';
import { mkdirSync, readFileSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import { startCluster } from '../support/cluster.ts';
import { runCommand } from '../support/commands.ts';
import { KIT_IMAGES } from '../support/kubelet.ts';
import { containerStatus, condition, isReady, type KubePod } from '../support/kube-types.ts';
import { apiPod, container, execProbe, httpProbe, livenessUntilFile } from '../support/kube-manifests.ts';
import { deletionSnapshot, leftoversOf, type DeletionSnapshot } from '../support/kube-leftovers.ts';

const NS = 'work';
type Json = Record<string, unknown>;

const podObject = (name: string, spec: Json & { containers: Json[] }, labels?: Record<string, string>) => apiPod(NS, name, spec, labels);

const running = (p: KubePod, c: string) => !!containerStatus(p, c)?.state.running;

test('skiffd as a node of a real cluster, driven through kubectl', { timeout: 20 * 60_000 }, async (t) => {
  // A second runtime handler, runc with a --root of its own, for a RuntimeClass (crun cannot run on this
  // cgroup v1 host; the Debian node runs it).
  const cluster = await startCluster(t, { skiffdConfig: '[runtimes.runc]\n[runtimes.runc-alt]\nruntime_path = "runc"\n' });
  if (!cluster) return;
  t.after(() => cluster.cleanup());
  const c = cluster;
  await c.namespace(NS);
  const hostDir = join(c.dir, 'host');
  mkdirSync(hostDir, { recursive: true });
  await c.apply(...manifests(hostDir));

  await t.test('the node: Ready, skiffd as its runtime, capacity, and the images it holds', async () => {
    const node = await c.node();
    assert.match(node.status.nodeInfo.containerRuntimeVersion, /^skiffd:\/\/\d+\.\d+\.\d+/);
    assert.equal(node.status.conditions.find((x) => x.type === 'Ready')?.status, 'True');
    assert.equal(node.status.capacity.cpu, String(cpus().length));
    assert.ok(Number.parseInt(node.status.capacity.memory, 10) > 0, `memory capacity ${node.status.capacity.memory}`);
    const described = await c.kubectlOk(['describe', 'node', c.nodeName]);
    assert.match(described, /Container Runtime Version:\s+skiffd:\/\//);
    await c.waitForPod(NS, 'logs', 'running', (p) => running(p, 'talk'));
    const images = await c.waitFor('the busybox image in the node status', async () => {
      const list = (await c.node()).status.images ?? [];
      return list.some((i) => i.names.some((n) => n.startsWith('registry.k8s.io/e2e-test-images/busybox'))) && list;
    });
    assert.ok(
      images.every((i) => i.sizeBytes > 0),
      'every image has a size',
    );
  });

  await t.test('the scheduler places pods on skiffd; kubectl logs with --timestamps, --since and -f', async () => {
    const p = await c.waitForPod(NS, 'logs', 'running', (pod) => running(pod, 'talk') && pod);
    assert.equal((p.spec as { nodeName?: string }).nodeName, c.nodeName);
    const all = await c.waitFor('six ticks in kubectl logs', async () => {
      const out = await c.kubectlOk(['logs', '-n', NS, 'logs']);
      return /tick 6\n/.test(out) && out;
    });
    // stdout and stderr are separate pipes, so the stderr line may land among the first ticks.
    const lines = all.split('\n');
    assert.ok(lines.includes('to stderr'), 'stderr is in the log');
    assert.deepEqual(lines.filter((l) => l !== 'to stderr').slice(0, 3), ['first line', 'tick 1', 'tick 2']);
    const stamped = (await c.kubectlOk(['logs', '-n', NS, 'logs', '--timestamps'])).trim().split('\n');
    for (const line of stamped) assert.match(line, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z /);
    // Ticks come every second and six have passed: the last two seconds hold a few, not the first line.
    const recent = await c.kubectlOk(['logs', '-n', NS, 'logs', '--since=2s']);
    assert.doesNotMatch(recent, /first line/);
    assert.ok(recent.split('\n').filter(Boolean).length < all.split('\n').filter(Boolean).length);
    // -f: a line written after kubectl started arrives through the open stream.
    const follower = spawn('kubectl', ['--kubeconfig', c.kubeconfig, 'logs', '-f', '--tail=1', '-n', NS, 'logs'], { stdio: ['ignore', 'pipe', 'pipe'] });
    t.after(() => follower.kill('SIGKILL'));
    let followed = '';
    follower.stdout.setEncoding('utf8').on('data', (d: string) => (followed += d));
    const first = await c.waitFor('kubectl logs -f to print a tick', () => /tick (\d+)/.exec(followed)?.[1], 30_000);
    await c.waitFor('a later tick through -f', () => new RegExp(`tick ${Number(first) + 2}\\n`).test(followed), 30_000);
    follower.kill('SIGTERM');
  });

  await t.test('kubectl logs --previous shows the run before a restart; the API reports its exit', async () => {
    const p = await c.waitForPod(NS, 'restarts', 'restarted once and running', (pod) => {
      const s = containerStatus(pod, 'app');
      return s && s.restartCount >= 1 && s.state.running && pod;
    });
    const s = containerStatus(p, 'app')!;
    // Said when the API's account of the restart is not as expected: what the node holds for the pod and
    // what the kubelet reported (a re-created sandbox, say, takes the first run's container with it).
    const explained = async () => {
      const label = { 'io.kubernetes.pod.uid': p.metadata.uid };
      const { containers } = await c.runtime.listContainers({ filter: { id: '', state: undefined, podSandboxId: '', labelSelector: label } });
      const { items } = await c.runtime.listPodSandbox({ filter: { id: '', state: undefined, labelSelector: label } });
      return JSON.stringify({
        status: s,
        sandboxes: items.map((x) => ({ id: x.id.slice(0, 12), attempt: x.metadata?.attempt, state: x.state })),
        containers: containers.map((x) => ({ id: x.id.slice(0, 12), name: x.metadata?.name, attempt: x.metadata?.attempt, state: x.state })),
        events: (await c.events(NS, 'restarts')).map((e) => `${e.reason}: ${e.message}`),
      });
    };
    if (s.restartCount !== 1 || s.lastState.terminated?.exitCode !== 3 || s.lastState.terminated?.reason !== 'Error') {
      assert.fail(`one restart, the first run ended with 3 (Error): ${await explained()}`);
    }
    assert.equal((await c.kubectlOk(['logs', '-n', NS, 'restarts', '--previous'])).trim(), 'first run');
    await c.waitFor('the second run in the current log', async () => (await c.kubectlOk(['logs', '-n', NS, 'restarts'])).trim() === 'second run');
  });

  await t.test('crash-loop back-off: CrashLoopBackOff with the exit code and reason of the last run', async () => {
    const p = await c.waitForPod(NS, 'crash', 'CrashLoopBackOff', (pod) => containerStatus(pod, 'app')?.state.waiting?.reason === 'CrashLoopBackOff' && pod);
    const s = containerStatus(p, 'app')!;
    assert.deepEqual([s.lastState.terminated?.exitCode, s.lastState.terminated?.reason], [2, 'Error']);
    const events = await c.events(NS, 'crash');
    assert.ok(
      events.some((e) => e.reason === 'BackOff' && /Back-off restarting failed container/.test(e.message)),
      JSON.stringify(events.map((e) => e.reason)),
    );
  });

  await t.test('OOMKilled: a container over its memory limit ends with 137 and the pod fails', async () => {
    const p = await c.waitForPod(NS, 'oom', 'the hog terminated', (pod) => containerStatus(pod, 'hog')?.state.terminated && pod);
    const term = containerStatus(p, 'hog')!.state.terminated!;
    assert.deepEqual([term.exitCode, term.reason], [137, 'OOMKilled']);
    await c.waitForPod(NS, 'oom', 'phase Failed', (pod) => pod.status.phase === 'Failed');
  });

  await t.test('probes: readiness follows a file kubectl exec makes; a failed liveness probe restarts', async () => {
    const before = await c.waitForPod(NS, 'probes', 'running', (p) => running(p, 'ready') && running(p, 'live') && p);
    assert.equal(condition(before, 'Ready'), false, 'not Ready before /tmp/ready exists');
    await c.kubectlOk(['exec', '-n', NS, 'probes', '-c', 'ready', '--', 'touch', '/tmp/ready']);
    // The kubelet answers "container not found" for a container between a kill and its restart (it looks
    // only among running containers): wait until the container runs, and take its restart count then.
    const restarts = await c.waitFor('the liveness container to run and take the exec', async () => {
      const p = await c.pod(NS, 'probes');
      if (!p || !running(p, 'live')) return undefined;
      const count = containerStatus(p, 'live')?.restartCount ?? 0;
      const r = await c.kubectl(['exec', '-n', NS, 'probes', '-c', 'live', '--', 'touch', '/tmp/unhealthy']);
      if (r.code === 0) return { count };
      if (/container not found/.test(r.stderr)) return undefined;
      throw new Error(`kubectl exec failed: ${r.stderr}`);
    });
    const after = await c.waitForPod(NS, 'probes', 'the liveness container restarted and every container ready', (p) => {
      return (containerStatus(p, 'live')?.restartCount ?? 0) > restarts.count && isReady(p);
    });
    assert.equal(containerStatus(after, 'ready')?.restartCount, 0, 'readiness never restarts');
    // The kubelet records the probe's failure and the kill it caused; events reach the API asynchronously.
    await c.waitFor("the liveness kill among the pod's events", async () =>
      (await c.events(NS, 'probes')).some((e) => e.reason === 'Killing' && /failed liveness probe/.test(e.message)),
    );
  });

  await t.test('volumes from the API: configMap, secret, downward API, service account token, emptyDir on disk and in memory', async () => {
    await c.waitForPod(NS, 'volumes', 'Ready', isReady);
    const sh = (script: string) => c.kubectlOk(['exec', '-n', NS, 'volumes', '--', 'sh', '-c', script]);
    assert.equal(await sh('cat /config/greeting'), 'hello');
    assert.equal(await sh('cat /secret/password'), 's3cret');
    assert.equal(await sh('echo "$PASSWORD"'), 's3cret\n');
    assert.equal(await sh('cat /info/name; echo; cat /info/labels | grep tier'), 'volumes\ntier="backend"\n');
    assert.equal(await sh('cat /info/memory-limit'), String(64 * 1024 * 1024));
    const token = await sh('cat /token/token');
    const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8')) as { sub: string; aud: string[] };
    assert.equal(claims.sub, `system:serviceaccount:${NS}:default`);
    assert.deepEqual(claims.aud, ['skiff-test']);
    assert.match(await sh('grep " /ram " /proc/mounts'), /^tmpfs \/ram tmpfs /);
    // The disk emptyDir is a directory on the node's disk (where the kubelet's root dir is), not a tmpfs of its
    // own: the same file system type (statfs's magic number) inside as for the root dir on the node.
    assert.equal((await sh('stat -f -c %t /scratch')).trim(), statfsSync(c.dir).type.toString(16));
    assert.equal(await sh('echo kept > /scratch/f; cat /scratch/f'), 'kept\n');
    await c.kubectlOk(['patch', 'configmap', '-n', NS, 'greeting', '--type=merge', '-p', '{"data":{"greeting":"updated"}}']);
    await c.waitFor('the updated configMap in the mounted file', async () => (await sh('cat /config/greeting')) === 'updated', 150_000);
  });

  await t.test('a Deployment rolls out, rolls over to a new template, and scales up and down', async () => {
    const rollout = (timeout = '180s') => c.kubectlOk(['rollout', 'status', '-n', NS, 'deployment/web', `--timeout=${timeout}`], { timeoutMs: 200_000 });
    await rollout();
    const first = await c.pods(NS, 'app=web');
    assert.equal(first.length, 2);
    assert.ok(first.every((p) => isReady(p)));
    await c.kubectlOk(['set', 'env', '-n', NS, 'deployment/web', 'VERSION=2']);
    await rollout();
    const rolled = await c.waitFor("only the new template's 2 pods", async () => {
      const pods = await c.pods(NS, 'app=web');
      return pods.length === 2 && pods.every((p) => !first.some((f) => f.metadata.uid === p.metadata.uid)) && pods;
    });
    assert.equal((await c.kubectlOk(['exec', '-n', NS, rolled[0].metadata.name, '--', 'sh', '-c', 'echo $VERSION'])).trim(), '2');
    await c.kubectlOk(['scale', '-n', NS, 'deployment/web', '--replicas=3']);
    await rollout();
    await c.waitFor('3 ready pods', async () => (await c.pods(NS, 'app=web')).filter((p) => isReady(p)).length === 3);
    await c.kubectlOk(['scale', '-n', NS, 'deployment/web', '--replicas=1']);
    await c.waitFor('1 pod left', async () => (await c.pods(NS, 'app=web')).length === 1);
  });

  await t.test('a RuntimeClass picks the runtime handler: the pod runs under that runtime and no other', async () => {
    const p = await c.waitForPod(NS, 'classy', 'running', (pod) => running(pod, 'app') && pod);
    assert.equal((p.spec as { runtimeClassName?: string }).runtimeClassName, 'alt');
    const id = (containerStatus(p, 'app')?.containerID ?? '').replace(/^skiffd:\/\//, '');
    const held = async (handler: string) =>
      (await runCommand('runc', ['--root', join(c.skiffd.state, handler), 'list', '-q'], { timeoutMs: 30_000 })).stdout.split('\n');
    assert.ok((await held('runc-alt')).includes(id), "the container is in the handler runc-alt's runtime state");
    assert.ok(!(await held('runc')).includes(id), "and not in the default handler's");
    const sandbox = await c.runtime.listPodSandbox({ filter: { id: '', state: undefined, labelSelector: { 'io.kubernetes.pod.uid': p.metadata.uid } } });
    assert.deepEqual(
      sandbox.items.map((x) => x.runtimeHandler),
      ['runc-alt'],
    );
    assert.equal((await c.kubectlOk(['exec', '-n', NS, 'classy', '--', 'cat', '/tmp/where'])).trim(), 'alt');
  });

  await t.test('a Job completes; a DaemonSet runs one pod on the node', async () => {
    await c.kubectlOk(['wait', '-n', NS, '--for=condition=complete', 'job/once', '--timeout=120s'], { timeoutMs: 130_000 });
    const [jobPod] = await c.pods(NS, 'job-name=once');
    assert.equal((await c.kubectlOk(['logs', '-n', NS, jobPod.metadata.name])).trim(), 'job done');
    await c.kubectlOk(['rollout', 'status', '-n', NS, 'daemonset/agent', '--timeout=120s'], { timeoutMs: 130_000 });
    const agents = await c.pods(NS, 'app=agent');
    assert.equal(agents.length, 1);
    assert.equal((agents[0].spec as { nodeName?: string }).nodeName, c.nodeName);
  });

  await t.test('graceful deletion: preStop, then SIGTERM, and the pod goes when its container exits', async () => {
    await c.waitForPod(NS, 'graceful', 'running', (p) => running(p, 'app'));
    await c.waitFor('the container to start', () => readIf(join(hostDir, 'events')).includes('started'));
    // The grace period is ten minutes: the pod can only be gone within kubectl's bound if the container's
    // exit on SIGTERM ended it, not the kill at the end of the grace period.
    await c.kubectlOk(['delete', 'pod', '-n', NS, 'graceful', '--wait=true', '--timeout=150s'], { timeoutMs: 160_000 });
    assert.deepEqual(readIf(join(hostDir, 'events')).trim().split('\n'), ['started', 'prestop', 'term']);
  });

  await t.test('pods the node cannot run say why in kubectl describe', async () => {
    const missing = await c.waitForPod(
      NS,
      'no-binary',
      'a start error',
      (p) => containerStatus(p, 'app')?.lastState.terminated ?? containerStatus(p, 'app')?.state.terminated,
    );
    assert.equal(missing.reason, 'StartError');
    assert.match(missing.message ?? '', /no-such-binary/);
    assert.match(await c.kubectlOk(['describe', 'pod', '-n', NS, 'no-binary']), /Warning\s+Failed\s.*no-such-binary/);
    await c.waitForPod(NS, 'no-image', 'an image pull error', (p) =>
      /ErrImagePull|ImagePullBackOff/.test(containerStatus(p, 'app')?.state.waiting?.reason ?? ''),
    );
    const events = await c.events(NS, 'no-image');
    const failed = events.find((e) => e.reason === 'Failed' && /no-such-image/.test(e.message));
    assert.ok(failed, JSON.stringify(events.map((e) => `${e.reason}: ${e.message}`)));
    assert.match(failed.message, /not found|manifest unknown|404/i);
  });

  await t.test('stats through the kubelet: the pods on skiffd with CPU, memory and their volumes', async () => {
    const summary = await c.waitFor('CPU and memory of the logs pod in /stats/summary', async () => {
      const s = await c.statsSummary();
      const p = s.pods?.find((x) => x.podRef.namespace === NS && x.podRef.name === 'logs');
      const talk = p?.containers?.find((x) => x.name === 'talk');
      return (talk?.cpu?.usageCoreNanoSeconds ?? 0) > 0 && (talk?.memory?.workingSetBytes ?? 0) > 0 && s;
    });
    assert.equal(summary.node.nodeName, c.nodeName);
    assert.ok((summary.node.memory?.workingSetBytes ?? 0) > 0);
    // The kubelet measures volumes on its own period (volumeStatsAggPeriod, a minute by default).
    const scratch = await c.waitFor(
      'the emptyDir volume in /stats/summary',
      async () =>
        (await c.statsSummary()).pods?.find((x) => x.podRef.namespace === NS && x.podRef.name === 'volumes')?.volume?.find((v) => v.name === 'scratch'),
      150_000,
    );
    assert.ok((scratch.usedBytes ?? 0) > 0, `the emptyDir holds a file: ${JSON.stringify(scratch)}`);
  });

  await t.test('kill -9 of skiffd, then a restart of the kubelet: no pod restarts or goes, and the API agrees', async () => {
    const watched = ['logs', 'volumes', 'probes'];
    const snapshot = async () =>
      Object.fromEntries(
        await Promise.all(
          watched.map(async (name) => {
            const p = await c.waitForPod(NS, name, 'Ready', isReady);
            return [name, (p.status.containerStatuses ?? []).map((s) => `${s.name}:${s.containerID}:${s.restartCount}`).join(',')] as const;
          }),
        ),
      );
    const before = await snapshot();
    await c.restartSkiffd('SIGKILL');
    // The node answers through the new daemon: exec goes API server -> kubelet -> skiffd's streaming server.
    await c.waitFor(
      'kubectl exec through the restarted daemon',
      async () => (await c.kubectl(['exec', '-n', NS, 'logs', '--', 'echo', 'back'])).stdout === 'back\n',
    );
    // A pod created now runs: the kubelet's relist and the runtime agree again.
    await c.apply(podObject('after-crash', { containers: [container('app', { script: 'exec sleep 3600' })] }));
    await c.waitForPod(NS, 'after-crash', 'Ready', isReady);
    assert.deepEqual(await snapshot(), before);
    await c.restartKubelet();
    await c.waitFor(
      'kubectl exec after the kubelet restart',
      async () => (await c.kubectl(['exec', '-n', NS, 'after-crash', '--', 'echo', 'back'])).stdout === 'back\n',
    );
    assert.deepEqual(await snapshot(), before);
    // Every container running on the node is one the API knows, or comes to know. The kubelet keeps a
    // crash-looping container's back-off in memory, so its restart starts the 'crash' pod's container at
    // once, and that one runs before the kubelet's status reaches the API server: each container unknown
    // now must become known or stop within the bound. A second container for one attempt (a create whose
    // answer the crash lost) keeps running unknown, and fails here.
    const unknownRunning = async () => {
      const { containers } = await c.runtime.listContainers({
        filter: { id: '', state: undefined, podSandboxId: '', labelSelector: { 'io.kubernetes.pod.namespace': NS } },
      });
      const apiIds = new Set(
        (await c.pods(NS)).flatMap((p) => (p.status.containerStatuses ?? []).map((s) => s.containerID?.replace(/^[a-z]+:\/\//, ''))).filter(Boolean),
      );
      return containers
        .filter((x) => x.state === 1 && !apiIds.has(x.id))
        .map((x) => `${x.id.slice(0, 12)} (pod ${x.labels['io.kubernetes.pod.name']}, container ${x.metadata?.name}, attempt ${x.metadata?.attempt})`);
    };
    const unknownNow = await unknownRunning();
    if (unknownNow.length > 0) console.log(`running, not yet in the API: ${unknownNow.join(', ')}`);
    await c.waitFor(`the API to know, or the node to stop, each running container it did not know: ${unknownNow.join(', ')}`, async () => {
      const still = await unknownRunning();
      return unknownNow.every((x) => !still.includes(x));
    });
  });

  await t.test('deleting the namespace leaves nothing on the node', async () => {
    const snapshots: DeletionSnapshot[] = [];
    for (const [name, containers] of [
      ['volumes', ['app']],
      ['logs', ['talk']],
      ['after-crash', ['app']],
    ] as const) {
      const p = await c.waitForPod(NS, name, 'Ready', isReady);
      snapshots.push(await deletionSnapshot(c, p, [...containers]));
    }
    await c.kubectlOk(['delete', 'namespace', NS, '--wait=true', '--timeout=180s'], { timeoutMs: 190_000 });
    await c.waitFor('no sandbox of the namespace in the runtime', async () => {
      const { items } = await c.runtime.listPodSandbox({ filter: { id: '', state: undefined, labelSelector: { 'io.kubernetes.pod.namespace': NS } } });
      return items.length === 0;
    });
    const left = (await Promise.all(snapshots.map((s) => leftoversOf(c, s)))).flat();
    assert.deepEqual(left, []);
  });
});

function readIf(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

function manifests(hostDir: string): Json[] {
  const busybox = KIT_IMAGES.busybox;
  const nginx = KIT_IMAGES.nginx;
  return [
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'greeting', namespace: NS },
      data: { greeting: 'hello' },
    },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'password', namespace: NS },
      stringData: { password: 's3cret' },
    },
    podObject('logs', {
      containers: [container('talk', { script: 'echo first line; echo to stderr >&2; i=1; while true; do echo "tick $i"; i=$((i+1)); sleep 1; done' })],
    }),
    podObject('restarts', {
      volumes: [{ name: 'data', emptyDir: {} }],
      containers: [
        container('app', {
          script: 'if [ ! -f /data/ran ]; then touch /data/ran; echo first run; exit 3; fi; echo second run; exec sleep 3600',
          extra: { volumeMounts: [{ name: 'data', mountPath: '/data' }] },
        }),
      ],
    }),
    podObject('crash', { containers: [container('app', { script: 'echo crashing; exit 2' })] }),
    podObject('oom', {
      restartPolicy: 'Never',
      containers: [
        // dd's 64 MiB buffer does not fit in 16 MiB.
        container('hog', {
          script: 'exec dd if=/dev/zero of=/dev/null bs=64M count=1',
          resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '16Mi' } },
        }),
      ],
    }),
    podObject('probes', {
      containers: [
        container('ready', { script: 'exec sleep 3600', extra: { readinessProbe: execProbe('test -f /tmp/ready') } }),
        container('live', { script: 'exec sleep 3600', extra: { livenessProbe: livenessUntilFile('/tmp/unhealthy') } }),
      ],
    }),
    podObject(
      'volumes',
      {
        volumes: [
          { name: 'config', configMap: { name: 'greeting' } },
          { name: 'secret', secret: { secretName: 'password' } },
          {
            name: 'info',
            downwardAPI: {
              items: [
                { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
                { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
                { path: 'memory-limit', resourceFieldRef: { containerName: 'app', resource: 'limits.memory' } },
              ],
            },
          },
          { name: 'token', projected: { sources: [{ serviceAccountToken: { path: 'token', audience: 'skiff-test', expirationSeconds: 3600 } }] } },
          { name: 'scratch', emptyDir: {} },
          { name: 'ram', emptyDir: { medium: 'Memory', sizeLimit: '16Mi' } },
        ],
        containers: [
          container('app', {
            script: 'exec sleep 3600',
            resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '64Mi' } },
            extra: {
              env: [{ name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'password', key: 'password' } } }],
              volumeMounts: [
                { name: 'config', mountPath: '/config' },
                { name: 'secret', mountPath: '/secret' },
                { name: 'info', mountPath: '/info' },
                { name: 'token', mountPath: '/token' },
                { name: 'scratch', mountPath: '/scratch' },
                { name: 'ram', mountPath: '/ram' },
              ],
            },
          }),
        ],
      },
      { tier: 'backend' },
    ),
    podObject('graceful', {
      terminationGracePeriodSeconds: 600,
      volumes: [{ name: 'host', hostPath: { path: hostDir, type: 'Directory' } }],
      containers: [
        container('app', {
          script: "trap 'echo term >> /host/events; exit 0' TERM; echo started >> /host/events; while true; do sleep 0.2; done",
          extra: {
            volumeMounts: [{ name: 'host', mountPath: '/host' }],
            lifecycle: { preStop: { exec: { command: ['sh', '-c', 'echo prestop >> /host/events'] } } },
          },
        }),
      ],
    }),
    { apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name: 'alt' }, handler: 'runc-alt' },
    podObject('classy', {
      runtimeClassName: 'alt',
      containers: [container('app', { script: 'echo alt > /tmp/where; exec sleep 3600' })],
    }),
    podObject('no-binary', { restartPolicy: 'Never', containers: [container('app', { extra: { command: ['no-such-binary'] } })] }),
    podObject('no-image', { containers: [container('app', { image: 'registry.k8s.io/no-such-image:1.0' })] }),
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: NS },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'web' } },
        strategy: { rollingUpdate: { maxUnavailable: 1, maxSurge: 1 } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: {
            terminationGracePeriodSeconds: 1,
            containers: [container('web', { image: nginx, extra: { readinessProbe: httpProbe(80), ports: [{ containerPort: 80 }] } })],
          },
        },
      },
    },
    {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'once', namespace: NS },
      spec: {
        backoffLimit: 0,
        template: {
          spec: { restartPolicy: 'Never', terminationGracePeriodSeconds: 1, containers: [container('job', { image: busybox, script: 'echo job done' })] },
        },
      },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'agent', namespace: NS },
      spec: {
        selector: { matchLabels: { app: 'agent' } },
        template: {
          metadata: { labels: { app: 'agent' } },
          spec: { terminationGracePeriodSeconds: 1, containers: [container('agent', { script: 'exec sleep 3600' })] },
        },
      },
    },
  ];
}
