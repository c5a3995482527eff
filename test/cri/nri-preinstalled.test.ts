// Pre-installed NRI plugins: skiffd starts each executable NN-name of its plugin directory with one
// end of a socket pair as fd 3 (NRI_PLUGIN_SOCKET=3, NRI_PLUGIN_NAME, NRI_PLUGIN_IDX), hands it its
// configuration from the config directory, and synchronizes it with every pod and container, again
// after a restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kitMissing, startKitRegistry } from '../support/cri-conformance.ts';
import { freePort } from '../support/registry.ts';
import { loggerEvents, nriSamplePath, nriSamplesMissing } from '../support/nri.ts';
import { podConfig } from '../support/pods.ts';
import { needs, unavailable } from '../support/prereq.ts';
import { startSkiffd, type SkiffdHandle } from '../support/skiffd.ts';
import { until } from '../support/wait.ts';

const BUSYBOX = 'registry.k8s.io/e2e-test-images/busybox:1.29-2';

test('NRI: pre-installed plugins start with their configuration and are synchronized again after a restart', { timeout: 300_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon', 'docker-registry'] })) return;
  const missing = kitMissing() ?? nriSamplesMissing();
  if (missing) return unavailable(t, missing);
  const dir = mkdtempSync(join(tmpdir(), 'skiff-nri-pre-'));
  chmodSync(dir, 0o711);
  // One hook, in order: the pod, the daemon, the registry, then the files.
  const cleanups: (() => Promise<void>)[] = [];
  t.after(async () => {
    for (const c of cleanups.reverse()) await c().catch((err: Error) => console.error(`# cleanup: ${err.message}`));
    rmSync(dir, { recursive: true, force: true });
  });
  const pluginDir = join(dir, 'plugins');
  const confDir = join(dir, 'conf.d');
  mkdirSync(pluginDir);
  mkdirSync(confDir);
  const logFile = join(dir, 'logger.log');
  // The sample logger, as a node installs it: an executable named NN-name, its options from a conf file.
  writeFileSync(join(pluginDir, '05-logger'), `#!/bin/sh\nexec ${nriSamplePath('logger')} -log-file ${logFile}\n`, { mode: 0o755 });
  writeFileSync(join(confDir, '05-logger.conf'), 'addEnv: NRI_FROM_CONF\n');
  writeFileSync(join(pluginDir, 'no-index'), '#!/bin/sh\nexit 1\n', { mode: 0o755 });
  writeFileSync(join(pluginDir, '10-not-executable'), '#!/bin/sh\nexit 1\n', { mode: 0o644 });
  // Files another user could change are never run as root.
  const marker = join(dir, 'untrusted-ran');
  for (const name of ['20-writable', '21-nobodys']) writeFileSync(join(pluginDir, name), `#!/bin/sh\ntouch ${marker}\nexit 1\n`, { mode: 0o755 });
  chmodSync(join(pluginDir, '20-writable'), 0o757);
  chownSync(join(pluginDir, '21-nobodys'), 65534, 65534);

  const registry = await startKitRegistry(await freePort());
  cleanups.push(() => registry.stop());
  const skiffDir = join(dir, 'skiffd');
  mkdirSync(skiffDir, { mode: 0o711 });
  const config = `${registry.mirrorsToml}\n[nri]\nsocket_path = ${JSON.stringify(join(dir, 'nri.sock'))}\nplugin_path = ${JSON.stringify(pluginDir)}\nplugin_config_path = ${JSON.stringify(confDir)}\ndisable_connections = true\n`;
  let d: SkiffdHandle = await startSkiffd({ dir: skiffDir, config });
  let podSandboxId = '';
  cleanups.push(async () => {
    if (podSandboxId) await d.runtime.removePodSandbox({ podSandboxId }).catch(() => {});
    await d.cleanup();
  });
  const synced = (h: SkiffdHandle, n: number) =>
    until(
      `skiffd to have synchronized the pre-installed logger (${n})`,
      () => (h.logs().match(/NRI plugin synchronized[^\n]*plugin=05-logger/g) ?? []).length >= n,
      30_000,
    );
  await synced(d, 1);
  assert.match(d.logs(), /ignoring file in the NRI plugin directory[^\n]*no-index[^\n]*invalid plugin index/);
  assert.doesNotMatch(d.logs(), /10-not-executable/);
  assert.match(d.logs(), /ignoring file in the NRI plugin directory[^\n]*20-writable[^\n]*writable by group or others \(mode 0757\)/);
  assert.match(d.logs(), /ignoring file in the NRI plugin directory[^\n]*21-nobodys[^\n]*owned by uid 65534/);
  assert.equal(existsSync(marker), false, 'neither untrusted plugin ran');
  assert.match(d.logs(), /connections from external NRI plugins are disabled/);

  await d.images.pullImage({ image: { image: BUSYBOX } });
  const sandboxConfig = podConfig('nri-pre');
  podSandboxId = (await d.runtime.runPodSandbox({ config: sandboxConfig })).podSandboxId;
  const { containerId } = await d.runtime.createContainer({
    podSandboxId,
    sandboxConfig,
    config: { metadata: { name: 'app' }, image: { image: BUSYBOX }, command: ['sleep', '3600'] },
  });
  await d.runtime.startContainer({ containerId });
  const env = (await d.runtime.execSync({ containerId, cmd: ['env'], timeout: 30n })).stdout.toString();
  assert.match(env, /^NRI_FROM_CONF=logger-pid-\d+$/m, 'the variable its configuration names');

  // A restart: the plugin is started again and shown the pod and container that are still there.
  await d.stop();
  d = await startSkiffd({ dir: skiffDir, config });
  await synced(d, 1);
  const events = loggerEvents(readFileSync(logFile, 'utf8')).map((e) => e.event);
  assert.deepEqual(events.filter((e) => e === 'Synchronize').length, 2, events.join(' '));
  const log = readFileSync(logFile, 'utf8');
  const lastSync = log.slice(log.lastIndexOf('Synchronize: pods:'));
  assert.match(lastSync, /Synchronize: {4}- .*|Synchronize: {4}name: nri-pre|name: nri-pre/);
  assert.match(lastSync, new RegExp(`id: ${containerId}`));
  // It still adjusts containers made from now on.
  const second = await d.runtime.createContainer({
    podSandboxId,
    sandboxConfig,
    config: { metadata: { name: 'again' }, image: { image: BUSYBOX }, command: ['sleep', '3600'] },
  });
  await d.runtime.startContainer({ containerId: second.containerId });
  assert.match((await d.runtime.execSync({ containerId: second.containerId, cmd: ['env'], timeout: 30n })).stdout.toString(), /^NRI_FROM_CONF=/m);
});
