// The streaming scenario against a real skiffd over CRI gRPC, shared by the source and build tests:
// an image pulled from a local registry, a pod on a private CNI network, containers started by the
// daemon; kubectl (SPDY) goes through the kube-apiserver facade to the URLs the daemon's
// Exec/Attach/PortForward return.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { ContainerState, NamespaceMode, type ContainerConfig, type DeepPartial, type PodSandboxConfig } from '../../proto/gen/runtime/v1/api.ts';
import { startSkiffd, type SkiffdHandle } from './skiffd.ts';
import { buildImage, buildTar, busyboxBaseEntries, Pusher } from './image-builder.ts';
import { skiffdNetworkConfig } from './netns.ts';
import { podConfig } from './pods.ts';
import { startKubeFacade } from './kube-facade.ts';
import { until } from './wait.ts';
import { httpGetIndex, runCommand } from './commands.ts';
import { startPodWorld } from './pod-world.ts';

export const STREAMING_DAEMON_PREREQS = {
  root: true,
  commands: ['runc', 'conmon', 'unshare', 'catatonit', 'nsenter', 'busybox', '/usr/lib/cni/bridge', '/usr/bin/docker-registry', 'kubectl'],
};

const SPDY = { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false', KUBECTL_PORT_FORWARD_WEBSOCKETS: 'false' };

/** The whole scenario against one daemon; `command` runs a build instead of the sources. */
export async function streamingThroughDaemon(t: import('node:test').TestContext, command?: string[], cwd?: string): Promise<void> {
  const { net, registry, cleanups } = await startPodWorld(t, 'skiff-strd-');

  const image = buildImage({ format: 'oci', layers: [await buildTar(busyboxBaseEntries())], env: ['PATH=/bin'], cmd: ['/bin/sh'] });
  const pusher = new Pusher(registry.url);
  for (const b of [image.config, ...image.layers]) await pusher.blob('skiff/busybox', b);
  await pusher.manifest('skiff/busybox', '1', image.manifest);
  const ref = `${registry.host}/skiff/busybox:1`;

  const config = `${skiffdNetworkConfig(net)}\n[registry.configs."${registry.host}"]\ninsecure = true\n\n[streaming]\naddress = "127.0.0.1"\nport = 0\n`;
  const d: SkiffdHandle = await startSkiffd({ config, command, cwd });
  cleanups.push(() => d.cleanup());
  cleanups.push(async () => {
    for (const p of (await d.runtime.listPodSandbox({})).items) await d.runtime.removePodSandbox({ podSandboxId: p.id });
  });
  await d.images.pullImage({ image: { image: ref } });
  const podCfg: DeepPartial<PodSandboxConfig> = podConfig('streampod');
  const { podSandboxId } = await d.runtime.runPodSandbox({ config: podCfg });
  const ns = { network: NamespaceMode.POD, ipc: NamespaceMode.POD, pid: NamespaceMode.CONTAINER };
  const ctr = (name: string, extra: DeepPartial<ContainerConfig>): DeepPartial<ContainerConfig> => ({
    metadata: { name, attempt: 0 },
    image: { image: ref },
    logPath: `${name}.log`,
    linux: { securityContext: { namespaceOptions: ns } },
    ...extra,
  });
  const ids: Record<string, string> = {};
  const specs: Record<string, DeepPartial<ContainerConfig>> = {
    shell: ctr('shell', { command: ['sh', '-c', 'mkdir -p /www && echo hello-from-daemon-pod > /www/index.html && httpd -p 8080 -h /www && exec sleep 3600'] }),
    echo: ctr('echo', { command: ['sh', '-c', 'while read line; do echo "got $line"; done; echo "stdin closed"'], stdin: true, stdinOnce: true }),
  };
  for (const [name, spec] of Object.entries(specs)) {
    ids[name] = (await d.runtime.createContainer({ podSandboxId, config: spec, sandboxConfig: podCfg })).containerId;
    await d.runtime.startContainer({ containerId: ids[name] });
  }
  for (const id of Object.values(ids)) {
    await until(
      `container ${id.slice(0, 12)} running`,
      async () => (await d.runtime.containerStatus({ containerId: id })).status?.state === ContainerState.CONTAINER_RUNNING,
    );
  }

  const urls: string[] = [];
  const facade = await startKubeFacade([{ name: 'streampod', containers: [{ name: 'shell' }, { name: 'echo', stdin: true, stdinOnce: true }] }], {
    exec: async (o) => {
      const { url } = await d.runtime.exec({ containerId: ids[o.container], cmd: o.command, tty: o.tty, stdin: o.stdin, stdout: o.stdout, stderr: o.stderr });
      urls.push(url);
      return url;
    },
    attach: async (o) => (await d.runtime.attach({ containerId: ids[o.container], tty: o.tty, stdin: o.stdin, stdout: o.stdout, stderr: o.stderr })).url,
    portForward: async (o) => (await d.runtime.portForward({ podSandboxId, port: o.ports })).url,
  });
  cleanups.push(() => facade.close());
  const kubectl = (args: string[], input?: string) => runCommand('kubectl', ['--server', facade.url, ...args], { env: SPDY, input });

  const e = await kubectl(['exec', 'streampod', '-c', 'shell', '--', 'sh', '-c', 'echo from-exec; exit 3']);
  assert.equal(e.code, 3, `${e.stderr}\ndaemon log:\n${d.logs()}`);
  assert.equal(e.stdout, 'from-exec\n');
  assert.match(urls[0], /^http:\/\/127\.0\.0\.1:\d+\/exec\//, 'the URL points at the configured loopback address');

  const a = await kubectl(['attach', '-i', 'streampod', '-c', 'echo'], 'ping\n');
  assert.equal(a.code, 0, `${a.stderr}\ndaemon log:\n${d.logs()}`);
  assert.match(a.stdout, /got ping\n[^]*stdin closed/);

  const pf = spawn('kubectl', ['--server', facade.url, 'port-forward', 'pod/streampod', ':8080'], {
    env: { ...process.env, ...SPDY },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  cleanups.push(async () => void pf.kill('SIGKILL'));
  let out = '';
  pf.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
  pf.stderr.setEncoding('utf8').on('data', (s: string) => (out += s));
  const port = await until('kubectl port-forward to listen', () => Number(/Forwarding from 127\.0\.0\.1:(\d+) -> 8080/.exec(out)?.[1] ?? 0), 30_000);
  // httpd starts a moment after the container: retry the first request briefly.
  const body = await until('the pod web server through port-forward', () => httpGetIndex(port).catch(() => undefined), 30_000);
  assert.equal(body, 'hello-from-daemon-pod\n');
}
