// The streaming scenario on a skiffd that a cluster's kubelet drives, shared by the tests of the builds:
// a pod placed by the scheduler, then kubectl exec, attach and port-forward through kube-apiserver and
// the kubelet to the streaming server of the daemon under test.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { startCluster } from './cluster.ts';
import { httpGetIndex } from './commands.ts';
import { apiPod, container } from './kube-manifests.ts';
import { isReady } from './kube-types.ts';

export const STREAMING_DAEMON_PREREQS = { root: true, commands: ['kubectl'] };

const SPDY = { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false', KUBECTL_PORT_FORWARD_WEBSOCKETS: 'false' };

/** The whole scenario against a node whose skiffd runs `command` in `cwd`. */
export async function streamingThroughDaemon(t: import('node:test').TestContext, command: string[], cwd: string): Promise<void> {
  const c = await startCluster(t, { skiffdCommand: command, skiffdCwd: cwd });
  if (!c) return;
  t.after(() => c.cleanup());
  await c.namespace('stream');
  await c.apply(
    apiPod('stream', 'streampod', {
      containers: [
        container('shell', { script: 'mkdir -p /www && echo hello-from-daemon-pod > /www/index.html && httpd -p 8080 -h /www && exec sleep 3600' }),
        container('echo', { script: 'while read line; do echo "got $line"; done; echo "stdin closed"', extra: { stdin: true, stdinOnce: true } }),
      ],
    }),
  );
  await c.waitForPod('stream', 'streampod', 'Ready', isReady);
  const kubectl = (args: string[], input?: string) => c.kubectl(['-n', 'stream', ...args], { env: SPDY, input });

  const e = await kubectl(['exec', 'streampod', '-c', 'shell', '--', 'sh', '-c', 'echo from-exec; exit 3']);
  assert.equal(e.code, 3, `${e.stderr}\n${c.diagnose()}`);
  assert.equal(e.stdout, 'from-exec\n');

  const a = await kubectl(['attach', '-i', 'streampod', '-c', 'echo'], 'ping\n');
  assert.equal(a.code, 0, `${a.stderr}\n${c.diagnose()}`);
  assert.match(a.stdout, /got ping\n[^]*stdin closed/);

  const pf = spawn('kubectl', ['--kubeconfig', c.kubeconfig, '-n', 'stream', 'port-forward', 'pod/streampod', ':8080'], {
    env: { ...process.env, ...SPDY },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => void pf.kill('SIGKILL'));
  let out = '';
  pf.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
  pf.stderr.setEncoding('utf8').on('data', (s: string) => (out += s));
  const port = await c.waitFor('kubectl port-forward to listen', () => Number(/Forwarding from 127\.0\.0\.1:(\d+) -> 8080/.exec(out)?.[1] ?? 0), 30_000);
  const body = await c.waitFor('the pod web server through port-forward', () => httpGetIndex(port).catch(() => undefined), 30_000);
  assert.equal(body, 'hello-from-daemon-pod\n');
}
