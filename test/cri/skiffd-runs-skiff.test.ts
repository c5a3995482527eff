// Both products end to end: the GraphQL server's OCI image (node build.mjs image, no container daemon)
// goes to a local registry with skopeo, skiffd pulls it and runs it in a pod with a host port, the
// countries API answers through that port, and a stop drains the server, which exits 0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContainerState } from '../../proto/gen/runtime/v1/api.ts';
import { build as buildImage, IMAGE_PORT } from '../../scripts/build-image.mjs';
import { build as buildServer } from '../../scripts/build-server.mjs';
import { runCommand } from '../support/commands.ts';
import { createTestNetwork, freePort, skiffdNetworkConfig } from '../support/netns.ts';
import { podConfig } from '../support/pods.ts';
import { needs } from '../support/prereq.ts';
import { startRegistry } from '../support/registry.ts';
import { startSkiffd } from '../support/skiffd.ts';
import { until } from '../support/wait.ts';

test('skiffd runs skiff: the GraphQL server image pulled, run in a pod, queried through a host port, drained on stop', { timeout: 300_000 }, async (t) => {
  if (
    !needs(t, {
      root: true,
      commands: ['runc', 'conmon', 'docker-registry', 'skopeo', 'ldd', 'unshare', 'nsenter', '/usr/lib/cni/bridge', '/usr/lib/cni/portmap'],
    })
  )
    return;
  const dir = mkdtempSync(join(tmpdir(), 'skiff-image-'));
  // Undone newest first: the pod before the daemon, the daemon before its network and the registry.
  const undo: (() => Promise<unknown> | unknown)[] = [() => rmSync(dir, { recursive: true, force: true })];
  t.after(async () => {
    for (const step of undo.reverse()) await step();
  });

  const server = await buildServer({ outfile: join(dir, 'server.mjs'), quiet: true });
  const image = await buildImage({ outdir: join(dir, 'image'), server: server.file, tag: 'e2e', quiet: true });

  const registry = await startRegistry();
  undo.push(() => registry.stop());
  const ref = `${registry.host}/skiff/graphql:e2e`;
  const pushed = await runCommand('skopeo', ['copy', '--quiet', '--dest-tls-verify=false', `oci:${image.dir}:e2e`, `docker://${ref}`], { timeoutMs: 120_000 });
  assert.equal(pushed.code, 0, `skopeo copy failed: ${pushed.stderr}`);

  const net = createTestNetwork(mkdtempSync(join(dir, 'net-')));
  undo.push(() => net.cleanup());
  const d = await startSkiffd({ config: `${skiffdNetworkConfig(net)}\n[registry.configs."${registry.host}"]\ninsecure = true\n` });
  undo.push(() => d.cleanup());

  const pulled = await d.images.pullImage({ image: { image: ref } });
  const status = await d.images.imageStatus({ image: { image: ref } });
  assert.equal(status.image?.id, pulled.imageRef);
  assert.deepEqual(status.image?.repoDigests, [`${registry.host}/skiff/graphql@${image.manifestDigest}`]);
  assert.equal(status.image?.uid?.value, 1000n, 'the image runs as an unprivileged user');

  const hostPort = await freePort();
  const logDirectory = join(dir, 'logs');
  const sandbox = podConfig('skiff', { portMappings: [{ containerPort: IMAGE_PORT, hostPort }], logDirectory });
  const { podSandboxId } = await d.runtime.runPodSandbox({ config: sandbox });
  undo.push(() => d.runtime.removePodSandbox({ podSandboxId }).catch(() => {}));
  const { containerId } = await d.runtime.createContainer({
    podSandboxId,
    config: { metadata: { name: 'graphql' }, image: { image: ref }, logPath: 'graphql.log', linux: {} },
    sandboxConfig: sandbox,
  });
  await d.runtime.startContainer({ containerId });

  const url = `http://127.0.0.1:${hostPort}/graphql?query=${encodeURIComponent('{ country(code: "BR") { name capital currency } }')}`;
  const body = await until(
    'the server in the pod to answer through the host port',
    async () => {
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
        return res.ok ? await res.text() : undefined;
      } catch {
        return undefined;
      }
    },
    60_000,
  );
  assert.deepEqual(JSON.parse(body), { data: { country: { name: 'Brazil', capital: 'Brasília', currency: 'BRL' } } });

  // StopContainer sends the image's stop signal (SIGTERM); the server drains and exits by itself.
  await d.runtime.stopContainer({ containerId, timeout: 20n });
  const stopped = (await d.runtime.containerStatus({ containerId })).status!;
  assert.equal(stopped.state, ContainerState.CONTAINER_EXITED);
  assert.equal(stopped.exitCode, 0, `the server exited ${stopped.exitCode} (${stopped.reason}); log:\n${readFileSync(stopped.logPath, 'utf8')}`);
  assert.equal(stopped.reason, 'Completed');
  await d.runtime.stopPodSandbox({ podSandboxId });
});
