// Runtime handlers (Kubernetes' RuntimeClass): skiffd with [runtimes.*] tables runs each pod under the
// OCI runtime its runtime_handler names. Here a second handler is runc with a --root of its own, so this
// host (whose cgroup v1 hybrid layout crun refuses) shows the routing: the container lives in that
// handler's runtime state and nowhere else, and create, streaming exec, ExecSync, stop and recovery after a
// kill -9 of skiffd all reach it there. crun itself runs as a handler on the Debian nodes (test/guest).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Status } from 'nice-grpc';
import { ContainerState, NamespaceMode } from '../../proto/gen/runtime/v1/api.ts';
import { runCommand } from '../support/commands.ts';
import { crictlPath, kitMissing, startKitRegistry } from '../support/cri-conformance.ts';
import { freePort } from '../support/netns.ts';
import { grpcCode, podConfig } from '../support/pods.ts';
import { needs, unavailable } from '../support/prereq.ts';
import { startSkiffd } from '../support/skiffd.ts';

const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';

/** The container ids a runc --root holds. */
async function runcList(root: string): Promise<string[]> {
  const r = await runCommand('runc', ['--root', root, 'list', '-q'], { timeoutMs: 30_000 });
  return r.stdout.split('\n').filter(Boolean);
}

test('runtime handlers: each pod runs under the OCI runtime it names; unknown names are refused; Status lists each', { timeout: 180_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon', 'docker-registry'] })) return;
  const missing = kitMissing('1.36');
  if (missing) return unavailable(t, missing);
  const registry = await startKitRegistry(await freePort());
  t.after(() => registry.stop());
  const handlers = '[runtimes.runc]\n[runtimes.crun]\n[runtimes.runc-alt]\nruntime_path = "runc"\n';
  let d = await startSkiffd({ config: `${registry.mirrorsToml}\n${handlers}` });
  t.after(() => d.cleanup());
  const dir = d.dir;
  const roots = { runc: join(d.state, 'runc'), alt: join(d.state, 'runc-alt') };

  const status = await d.runtime.status({});
  const listed = status.runtimeHandlers.map((h) => h.name);
  assert.deepEqual(listed, ['', 'crun', 'runc', 'runc-alt'], 'the default ("") and every handler, as containerd lists them');
  const features = Object.fromEntries(status.runtimeHandlers.map((h) => [h.name, h.features]));
  assert.deepEqual(features[''], features.runc, '"" is runc, the default');
  assert.deepEqual(features['runc-alt'], features.runc, 'the same binary can do the same');
  // crun 1.8 has no `features` command: nothing it cannot be shown to do is advertised.
  assert.deepEqual(features.crun, { recursiveReadOnlyMounts: false, userNamespaces: false });

  await d.images.pullImage({ image: { image: BUSYBOX } });
  const unknown = await grpcCode(d.runtime.runPodSandbox({ config: podConfig('nope', { network: NamespaceMode.NODE }), runtimeHandler: 'nope' }));
  assert.equal(unknown.code, Status.INVALID_ARGUMENT);
  assert.match(unknown.details, /runtime_handler "nope" is not configured on this node \(configured: "crun", "runc", "runc-alt"/);

  const sandboxConfig = podConfig('alt', { network: NamespaceMode.NODE });
  const { podSandboxId } = await d.runtime.runPodSandbox({ config: sandboxConfig, runtimeHandler: 'runc-alt' });
  assert.equal((await d.runtime.podSandboxStatus({ podSandboxId })).status?.runtimeHandler, 'runc-alt');
  const { containerId } = await d.runtime.createContainer({
    podSandboxId,
    sandboxConfig,
    config: { metadata: { name: 'app' }, image: { image: BUSYBOX }, command: ['sh', '-c', 'echo alt > /tmp/where; exec sleep 3600'] },
  });
  await d.runtime.startContainer({ containerId });
  assert.deepEqual(await runcList(roots.alt), [containerId], "the container is in the handler's runtime state");
  assert.deepEqual(await runcList(roots.runc), [], "and not in the default handler's");
  assert.equal((await d.runtime.execSync({ containerId, cmd: ['cat', '/tmp/where'], timeout: 30n })).stdout.toString(), 'alt\n');
  // Exec through the streaming server (crictl asks for the URL and speaks the stream), in the same runtime.
  const crictl = await runCommand(crictlPath('1.36'), ['--runtime-endpoint', `unix://${d.socket}`, 'exec', containerId, 'cat', '/tmp/where'], {
    timeoutMs: 60_000,
  });
  assert.equal(crictl.stdout, 'alt\n', crictl.stderr);

  // kill -9 of skiffd: the restarted daemon finds the container in its handler's runtime.
  d.channel.close();
  d.child.kill('SIGKILL');
  await d.exited;
  d = await startSkiffd({ dir, config: `${registry.mirrorsToml}\n${handlers}` });
  assert.equal((await d.runtime.containerStatus({ containerId })).status?.state, ContainerState.CONTAINER_RUNNING);
  assert.equal((await d.runtime.execSync({ containerId, cmd: ['cat', '/tmp/where'], timeout: 30n })).stdout.toString(), 'alt\n');
  await d.runtime.stopContainer({ containerId, timeout: 5n });
  assert.equal((await d.runtime.containerStatus({ containerId })).status?.state, ContainerState.CONTAINER_EXITED);
  await d.runtime.removePodSandbox({ podSandboxId });
  assert.deepEqual(await runcList(roots.alt), [], 'nothing left in its runtime state');
});
