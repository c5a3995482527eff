// skiffd without its attach add-on, as on an arm64 node (npm ci installs node-unix-socket's add-on for
// x64 only): the build warns instead of failing, and the daemon built that way starts, logs one warning,
// runs pods and containers, ExecSync works, and Attach answers FAILED_PRECONDITION saying what is
// missing and how to supply it. Both shipped forms, built into a temp dir with `addon: false`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Status } from 'nice-grpc';
import { ContainerState, NamespaceMode, type DeepPartial, type PodSandboxConfig } from '../../proto/gen/runtime/v1/api.ts';
import { addonFileName, build, findAddon } from '../../scripts/build-skiffd.mjs';
import { needs } from '../support/prereq.ts';
import { startSkiffd, type SkiffdHandle } from '../support/skiffd.ts';
import { buildImage, buildTar, busyboxBaseEntries, Pusher } from '../support/image-builder.ts';
import { skiffdNetworkConfig } from '../support/netns.ts';
import { grpcCode, podConfig } from '../support/pods.ts';
import { startPodWorld, type PodWorld } from '../support/pod-world.ts';
import { until } from '../support/wait.ts';

const PREREQS = { root: true, commands: ['runc', 'conmon', 'unshare', 'catatonit', '/usr/lib/cni/bridge', '/usr/bin/docker-registry'] };
const notInstalled = (id: string): string => {
  throw Object.assign(new Error(`Cannot find module '${id}'`), { code: 'MODULE_NOT_FOUND' });
};

test('build: a host without the add-on gets a warning that says how to supply it, not an error', () => {
  const arm64 = findAddon({ platform: 'linux', arch: 'arm64', env: {}, resolve: notInstalled });
  assert.equal(arm64.path, undefined);
  assert.ok(arm64.warning);
  assert.match(arm64.warning, /WITHOUT attach/);
  assert.match(arm64.warning, /node-unix-socket\.linux-arm64-gnu\.node/, 'names the missing file');
  assert.match(arm64.warning, /node-unix-socket-linux-arm64-gnu is not installed/, 'names the package looked for');
  assert.match(arm64.warning, /napi-rs/, 'says it is built from source with napi-rs');
  assert.match(arm64.warning, /SKIFFD_SEQPACKET_ADDON=\/path\/to\/node-unix-socket\.linux-arm64-gnu\.node/);
  assert.match(arm64.warning, /beside the installed skiffd/);
  assert.doesNotMatch(arm64.warning, /run `npm ci`/, 'npm ci cannot install it: package.json carries the x64 add-on only');
  assert.match(arm64.warning, /if your npm registry has node-unix-socket-linux-arm64-gnu@0\.2\.7, `npm install --no-save` it/);

  // x64 without the optional package (npm ci --omit=optional): the same warning, pointing at npm ci.
  const x64 = findAddon({ platform: 'linux', arch: 'x64', env: {}, resolve: notInstalled });
  assert.equal(x64.path, undefined);
  assert.match(x64.warning ?? '', /node-unix-socket\.linux-x64-gnu\.node[^]*`npm ci`/);
});

test('build: the add-on is taken from SKIFFD_SEQPACKET_ADDON, else from the npm package of the host', () => {
  const supplied = '/opt/addons/node-unix-socket.linux-arm64-gnu.node';
  assert.deepEqual(
    findAddon({ platform: 'linux', arch: 'arm64', env: { SKIFFD_SEQPACKET_ADDON: supplied }, resolve: notInstalled, exists: (p) => p === supplied }),
    { path: supplied },
  );
  assert.throws(
    () => findAddon({ platform: 'linux', arch: 'arm64', env: { SKIFFD_SEQPACKET_ADDON: '/nope.node' }, exists: () => false }),
    /SKIFFD_SEQPACKET_ADDON=\/nope\.node: no such file/,
    'an add-on named explicitly but absent stops the build',
  );
  const seen: string[] = [];
  const x64 = findAddon({
    platform: 'linux',
    arch: 'x64',
    env: {},
    resolve: (id) => {
      seen.push(id);
      return `/nm/${id}`;
    },
  });
  assert.deepEqual(seen, ['node-unix-socket-linux-x64-gnu/node-unix-socket.linux-x64-gnu.node']);
  assert.deepEqual(x64, { path: '/nm/node-unix-socket-linux-x64-gnu/node-unix-socket.linux-x64-gnu.node' });
  // On this machine: x64 resolves the installed optional dependency.
  if (process.arch === 'x64') assert.ok(existsSync(findAddon().path ?? ''), 'npm ci installed the x64 add-on');
  // skiffd runs on Linux x64 and arm64 only; anything else is a build error.
  assert.throws(() => findAddon({ platform: 'linux', arch: 's390x', env: {} }), /Linux on x64 or arm64; this is linux-s390x/);
  assert.throws(() => findAddon({ platform: 'darwin', arch: 'arm64', env: {} }), /this is darwin-arm64/);
});

/** Pod, container, ExecSync and Attach against one daemon built without the add-on. */
async function withoutAttach(
  t: import('node:test').TestContext,
  world: PodWorld,
  ref: string,
  run: { command: string[]; cwd: string; env?: Record<string, string>; reason?: RegExp },
): Promise<void> {
  const config = `${skiffdNetworkConfig(world.net)}\n[registry.configs."${world.registry.host}"]\ninsecure = true\n\n[streaming]\naddress = "127.0.0.1"\nport = 0\n`;
  const d: SkiffdHandle = await startSkiffd({ config, command: run.command, cwd: run.cwd, env: run.env });
  t.after(() => d.cleanup());
  const warnings = () => d.logs().match(/level=warn msg="attach is not available"[^\n]*/g) ?? [];
  const [warning, ...more] = warnings();
  assert.ok(warning && more.length === 0, `one start-up warning\ndaemon log:\n${d.logs()}`);
  assert.match(warning, new RegExp(`${addonFileName().replace(/\./g, '\\.')}[^]*SKIFFD_SEQPACKET_ADDON`));
  assert.match(warning, /looked_at=/, 'the log says where the add-on was looked for');

  await d.images.pullImage({ image: { image: ref } });
  const podCfg: DeepPartial<PodSandboxConfig> = podConfig('noaddon');
  const { podSandboxId } = await d.runtime.runPodSandbox({ config: podCfg });
  t.after(async () => {
    await d.runtime.removePodSandbox({ podSandboxId }).catch(() => {});
  });
  const { containerId } = await d.runtime.createContainer({
    podSandboxId,
    sandboxConfig: podCfg,
    config: {
      metadata: { name: 'sleeper', attempt: 0 },
      image: { image: ref },
      command: ['sh', '-c', 'echo ready; exec sleep 3600'],
      stdin: true,
      logPath: 'sleeper.log',
      linux: { securityContext: { namespaceOptions: { network: NamespaceMode.POD, ipc: NamespaceMode.POD, pid: NamespaceMode.CONTAINER } } },
    },
  });
  await d.runtime.startContainer({ containerId });
  await until('the container running', async () => (await d.runtime.containerStatus({ containerId })).status?.state === ContainerState.CONTAINER_RUNNING);

  const exec = await d.runtime.execSync({ containerId, cmd: ['sh', '-c', 'echo out-$((6*7)); echo err >&2; exit 4'], timeout: 10n });
  assert.deepEqual([Buffer.from(exec.stdout).toString(), Buffer.from(exec.stderr).toString(), exec.exitCode], ['out-42\n', 'err\n', 4]);

  for (const tty of [false, true]) {
    const attach = await grpcCode(d.runtime.attach({ containerId, stdin: true, stdout: true, stderr: !tty, tty }));
    assert.equal(attach.code, Status.FAILED_PRECONDITION, attach.details);
    assert.match(attach.details, /^Attach is not available on this node: skiffd cannot load node-unix-socket\.linux-\w+-gnu\.node/);
    assert.match(attach.details, /SOCK_SEQPACKET add-on/);
    if (run.reason) assert.match(attach.details, run.reason);
    assert.match(attach.details, /napi-rs/, 'says how to get the add-on');
    assert.match(
      attach.details,
      /set SKIFFD_SEQPACKET_ADDON to the \.node file or put it beside the skiffd executable \(or skiffd\.cjs\) as node-unix-socket\.linux-\w+-gnu\.node/,
    );
  }
  // Exec and port-forward need no add-on: their URLs are still handed out.
  assert.match((await d.runtime.exec({ containerId, cmd: ['true'], stdout: true })).url, /^http:\/\/127\.0\.0\.1:\d+\/exec\//);
  assert.match((await d.runtime.portForward({ podSandboxId, port: [8080] })).url, /^http:\/\/127\.0\.0\.1:\d+\/portforward\//);
  // The container is untouched by the refused attaches.
  assert.equal((await d.runtime.containerStatus({ containerId })).status?.state, ContainerState.CONTAINER_RUNNING);
  assert.equal(warnings().length, 1, 'no further warning per Attach');

  await d.runtime.removePodSandbox({ podSandboxId });
  assert.deepEqual(await d.stop(), { code: 0, signal: null });
}

test('built without the add-on: skiffd.cjs and the single executable run pods, ExecSync works, Attach says what is missing', {
  timeout: 240_000,
}, async (t) => {
  if (!needs(t, PREREQS)) return;
  const out = mkdtempSync(join(tmpdir(), 'skiffd-noaddon-'));
  t.after(() => rmSync(out, { recursive: true, force: true }));
  const built = await build({ outdir: join(out, 'dist'), quiet: true, addon: false });
  assert.equal(built.addon, undefined);
  assert.deepEqual(built.warnings, [], 'leaving it out on purpose is no warning');
  assert.equal(existsSync(join(out, 'dist', addonFileName())), false, 'no add-on beside skiffd.cjs');
  assert.ok(built.sea, 'the single executable was built');

  const world = await startPodWorld(t, 'skiff-noaddon-');
  const image = buildImage({ format: 'oci', layers: [await buildTar(busyboxBaseEntries())], env: ['PATH=/bin'], cmd: ['/bin/sh'] });
  const pusher = new Pusher(world.registry.url);
  for (const b of [image.config, ...image.layers]) await pusher.blob('skiff/busybox', b);
  await pusher.manifest('skiff/busybox', '1', image.manifest);
  const ref = `${world.registry.host}/skiff/busybox:1`;

  // Each form alone in a directory under /tmp: no add-on beside it, no node_modules above it.
  await t.test('node skiffd.cjs', async (t) => {
    const alone = mkdtempSync(join(out, 'cjs-'));
    copyFileSync(built.cjs, join(alone, 'skiffd.cjs'));
    await withoutAttach(t, world, ref, { command: [process.execPath, join(alone, 'skiffd.cjs')], cwd: alone });
  });
  // An add-on that is there but does not load (another architecture's, a broken build) is no crash either.
  await t.test('node skiffd.cjs with SKIFFD_SEQPACKET_ADDON naming a file that is no add-on', async (t) => {
    const alone = mkdtempSync(join(out, 'bad-'));
    copyFileSync(built.cjs, join(alone, 'skiffd.cjs'));
    const bogus = join(alone, 'not-an-addon.node');
    writeFileSync(bogus, 'not an ELF file\n');
    await withoutAttach(t, world, ref, {
      command: [process.execPath, join(alone, 'skiffd.cjs')],
      cwd: alone,
      env: { SKIFFD_SEQPACKET_ADDON: bogus },
      reason: new RegExp(`\\(${bogus.replace(/[.]/g, '\\.')}: [^)]+\\)`),
    });
  });
  await t.test('the single executable', async (t) => {
    const alone = mkdtempSync(join(out, 'sea-'));
    copyFileSync(built.sea!, join(alone, 'skiffd'));
    chmodSync(join(alone, 'skiffd'), 0o755);
    await withoutAttach(t, world, ref, { command: [join(alone, 'skiffd')], cwd: alone });
  });
});
