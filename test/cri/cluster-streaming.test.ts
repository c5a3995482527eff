// kubectl exec, attach, cp, port-forward and debug as a user runs them: kubectl -> kube-apiserver ->
// the kubelet (port 10250, x509 and webhook auth) -> skiffd's streaming server, on a pod the scheduler
// placed on skiffd's node. Each session runs over both of kubectl's transports: SPDY, and WebSocket
// (v5.channel.k8s.io, which the API server carries on to the kubelet).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startCluster } from '../support/cluster.ts';
import { apiPod, container } from '../support/kube-manifests.ts';
import { containerStatus, isReady } from '../support/kube-types.ts';
import { httpGetIndex, runCommand } from '../support/commands.ts';
import { needs } from '../support/prereq.ts';
import { untilTerminalSize, withDeadline } from '../support/terminal.ts';
import { KIT_IMAGES } from '../support/kubelet.ts';

const NS = 'streams';
const SPDY = { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false', KUBECTL_PORT_FORWARD_WEBSOCKETS: 'false' };
const WEBSOCKET = { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'true', KUBECTL_PORT_FORWARD_WEBSOCKETS: 'true' };
const TRANSPORTS = [
  ['SPDY', SPDY],
  ['WebSocket', WEBSOCKET],
] as const;

test('kubectl reaches pods on skiffd through kube-apiserver and the kubelet', { timeout: 15 * 60_000 }, async (t) => {
  if (!needs(t, { commands: ['script', 'stty', 'pgrep'] })) return;
  const cluster = await startCluster(t);
  if (!cluster) return;
  t.after(() => cluster.cleanup());
  const c = cluster;
  await c.namespace(NS);
  await c.apply(
    apiPod(NS, 'web', {
      restartPolicy: 'Never',
      containers: [
        container('shell', {
          script: 'mkdir -p /www && echo hello-from-pod > /www/index.html && httpd -p 8080 -h /www && httpd -p 8081 -h /www && exec sleep 3600',
        }),
        container('echo', {
          script: 'while read line; do echo "got $line"; echo "err $line" >&2; done; echo "stdin closed"',
          extra: { stdin: true, stdinOnce: true },
        }),
        container('echo2', { script: 'while read line; do echo "got $line"; done; echo "stdin closed"', extra: { stdin: true, stdinOnce: true } }),
        container('term', { extra: { command: ['sh'], stdin: true, tty: true } }),
      ],
    }),
  );
  await c.waitForPod(NS, 'web', 'Ready', isReady);
  const kubectl = (args: string[], env: Record<string, string>, o: { input?: string; timeoutMs?: number } = {}) =>
    c.kubectl(['-n', NS, ...args], { env, timeoutMs: 60_000, ...o });

  await t.test('exec: stdout, stderr, exit codes, stdin to EOF, a command that cannot start', async () => {
    for (const [name, env] of TRANSPORTS) {
      const r = await kubectl(['exec', 'web', '-c', 'shell', '--', 'sh', '-c', 'echo out-line; echo err-line >&2; exit 3'], env);
      assert.equal(r.code, 3, `${name}: exit code 3 expected; stderr: ${r.stderr}`);
      assert.equal(r.stdout, 'out-line\n');
      assert.match(r.stderr, /err-line/);
      const piped = await kubectl(['exec', '-i', 'web', '-c', 'shell', '--', 'sh', '-c', 'tr a-z A-Z; echo done'], env, { input: 'hello through stdin\n' });
      assert.equal(piped.code, 0, piped.stderr);
      assert.equal(piped.stdout, 'HELLO THROUGH STDIN\ndone\n', name);
      const missing = await kubectl(['exec', 'web', '-c', 'shell', '--', 'no-such-command'], env);
      assert.notEqual(missing.code, 0);
      assert.match(missing.stderr, /executable file not found|no such file/, `${name}: ${missing.stderr}`);
    }
  });

  await t.test('exec: 4 MB of stdin counted to EOF, and 3 MB of output arrive whole', async () => {
    const input = randomBytes(3 << 20).toString('base64'); // 4 MiB of text
    for (const [name, env] of TRANSPORTS) {
      const counted = await kubectl(['exec', '-i', 'web', '-c', 'shell', '--', 'sh', '-c', 'wc -c; echo after-eof'], env, { input, timeoutMs: 90_000 });
      assert.equal(counted.code, 0, counted.stderr);
      assert.equal(counted.stdout.replace(/ +/g, ''), `${input.length}\nafter-eof\n`, name);
      const big = await kubectl(['exec', 'web', '-c', 'shell', '--', 'sh', '-c', 'head -c 3000000 /dev/zero | tr "\\0" x; echo; echo tail-marker'], env, {
        timeoutMs: 90_000,
      });
      assert.equal(big.code, 0, big.stderr);
      assert.equal(big.stdout.length, 3_000_000 + 1 + 'tail-marker\n'.length, `${name}: all output arrived`);
      assert.ok(big.stdout.endsWith('x\ntail-marker\n'));
    }
  });

  await t.test('exec -ti: a terminal sized like the client, following a resize mid-session', async () => {
    for (const [name, env] of TRANSPORTS) {
      // kubectl runs on a terminal that script(1) provides; resizing that terminal from outside sends
      // kubectl SIGWINCH, as a user resizing a window would.
      const inner = `stty rows 33 cols 101; exec kubectl --kubeconfig ${c.kubeconfig} -n ${NS} exec -ti web -c shell -- sh`;
      const session = terminal(t, inner, env);
      await session.waitFor('the shell prompt', () => session.output().includes('# '));
      await untilTerminalSize(session, '33 101', `${name}: the initial size`);
      await runCommand('stty', ['-F', await session.kubectlPty(), 'rows', '41', 'cols', '127']);
      await untilTerminalSize(session, '41 127', `${name}: the size after a resize`);
      session.type('tty; exit 6\n');
      assert.equal(await withDeadline(`${name}: kubectl to exit`, session.exited, 30_000), 6);
      assert.match(session.output(), /\/dev\/pts\/\d+/, 'the command saw a terminal');
    }
  });

  await t.test('attach -i: a container reads what kubectl sends and sees EOF (stdinOnce)', async () => {
    const spdy = await kubectl(['attach', '-i', 'web', '-c', 'echo'], SPDY, { input: 'one\ntwo\n' });
    assert.equal(spdy.code, 0, spdy.stderr);
    assert.match(spdy.stdout, /got one\ngot two\n/);
    assert.match(spdy.stdout, /stdin closed/, 'the container saw EOF on its stdin');
    assert.match(spdy.stderr, /err one/, 'stderr comes back on its own stream');
    const ws = await kubectl(['attach', '-i', 'web', '-c', 'echo2'], WEBSOCKET, { input: 'three\n' });
    assert.equal(ws.code, 0, ws.stderr);
    assert.match(ws.stdout, /got three\n[^]*stdin closed/);
    const pod = await c.waitForPod(NS, 'web', 'both echo containers exited', (p) =>
      ['echo', 'echo2'].every((n) => containerStatus(p, n)?.state.terminated) ? p : undefined,
    );
    for (const n of ['echo', 'echo2']) assert.equal(containerStatus(pod, n)?.state.terminated?.exitCode, 0);
  });

  await t.test('attach -ti to a TTY container: its size follows the client through conmon', async () => {
    const inner = `stty rows 29 cols 97; exec kubectl --kubeconfig ${c.kubeconfig} -n ${NS} attach -ti web -c term`;
    const session = terminal(t, inner, SPDY);
    // The attach may not be wired up when the first line is typed: untilTerminalSize asks again.
    await untilTerminalSize(session, '29 97', 'the initial size');
    await runCommand('stty', ['-F', await session.kubectlPty(), 'rows', '37', 'cols', '111']);
    await untilTerminalSize(session, '37 111', 'the size after a resize');
    session.kill();
    const pod = await c.pod(NS, 'web');
    assert.ok(containerStatus(pod!, 'term')?.state.running, 'detaching leaves the container running');
  });

  await t.test('cp: binary data both ways, intact', async () => {
    const data = randomBytes(1_500_000);
    const local = join(c.dir, 'blob.bin');
    writeFileSync(local, data);
    const sum = createHash('md5').update(data).digest('hex');
    for (const [name, env] of TRANSPORTS) {
      const up = await kubectl(['cp', '-c', 'shell', local, 'web:/tmp/blob.bin'], env);
      assert.equal(up.code, 0, up.stderr);
      const inPod = await kubectl(['exec', 'web', '-c', 'shell', '--', 'md5sum', '/tmp/blob.bin'], env);
      assert.equal(inPod.stdout.split(' ')[0], sum, `${name}: uploaded bytes intact`);
      const back = join(c.dir, `blob-back-${name}.bin`);
      const down = await kubectl(['cp', '-c', 'shell', 'web:/tmp/blob.bin', back], env);
      assert.equal(down.code, 0, down.stderr);
      assert.equal(createHash('md5').update(readFileSync(back)).digest('hex'), sum, `${name}: downloaded bytes intact`);
    }
  });

  await t.test('port-forward: two ports, many requests on one forward, concurrent and one after another', async () => {
    for (const [name, env] of TRANSPORTS) {
      const child = spawn('kubectl', ['--kubeconfig', c.kubeconfig, '-n', NS, 'port-forward', 'pod/web', ':8080', ':8081'], {
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      t.after(() => child.kill('SIGKILL'));
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
      const ports = await c.waitFor(
        `${name}: kubectl port-forward to listen`,
        () => {
          const m = [...out.matchAll(/Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)/g)];
          return m.length >= 2 ? Object.fromEntries(m.map((x) => [x[2], Number(x[1])])) : undefined;
        },
        30_000,
      );
      const concurrent = await Promise.all(Array.from({ length: 20 }, (_, i) => httpGetIndex(ports[i % 2 ? '8081' : '8080'])));
      for (const b of concurrent) assert.equal(b, 'hello-from-pod\n', `${name}: ${out}`);
      for (let i = 0; i < 20; i++) assert.equal(await httpGetIndex(ports['8080']), 'hello-from-pod\n');
      child.kill('SIGTERM');
    }
  });

  await t.test('debug: an ephemeral container sees the processes of the container it targets', async () => {
    await c.kubectlOk([
      'debug',
      '-n',
      NS,
      'web',
      `--image=${KIT_IMAGES.busybox}`,
      '--target=shell',
      '--container=dbg',
      '--',
      'sh',
      '-c',
      'ps -o args; exec sleep 3600',
    ]);
    const pod = await c.waitForPod(NS, 'web', 'the ephemeral container running', (p) => {
      const s = (p.status as { ephemeralContainerStatuses?: { name: string; state: { running?: unknown } }[] }).ephemeralContainerStatuses;
      return s?.find((x) => x.name === 'dbg')?.state.running && p;
    });
    assert.ok(pod);
    const ps = await c.waitFor("the ephemeral container's ps in its log", async () => {
      const out = (await kubectl(['logs', 'web', '-c', 'dbg'], {})).stdout;
      return out.includes('httpd') && out;
    });
    assert.match(ps, /httpd -p 8080/, "the target container's processes");
    assert.match(ps, /sleep 3600/);
    const r = await kubectl(['exec', 'web', '-c', 'dbg', '--', 'sh', '-c', 'wget -qO- http://127.0.0.1:8080/'], SPDY);
    assert.equal(r.stdout, 'hello-from-pod\n', "the pod's network too");
  });
});

/** A command on a terminal of script(1)'s; the output of both its streams, typing, the pty of kubectl. */
function terminal(t: import('node:test').TestContext, command: string, env: Record<string, string>) {
  const child = spawn('script', ['-qfec', command, '/dev/null'], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  t.after(() => child.kill('SIGKILL'));
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const waitFor = async (what: string, fn: () => boolean, ms = 30_000) => {
    const deadline = Date.now() + ms;
    while (!fn()) {
      if (Date.now() > deadline) assert.fail(`timed out after ${ms} ms waiting for ${what}; output: ${JSON.stringify(out)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  return {
    output: () => out,
    type: (text: string) => child.stdin.write(text),
    exited,
    waitFor,
    kill: () => child.kill('SIGKILL'),
    async kubectlPty(): Promise<string> {
      let pid = 0;
      const deadline = Date.now() + 15_000;
      while (!pid) {
        pid = Number((await runCommand('pgrep', ['-P', String(child.pid), '-f', 'kubectl'])).stdout.trim().split('\n')[0]) || 0;
        if (!pid && Date.now() > deadline) assert.fail('kubectl did not start under script(1)');
        if (!pid) await new Promise((r) => setTimeout(r, 50));
      }
      return readlinkSync(`/proc/${pid}/fd/0`);
    },
  };
}
