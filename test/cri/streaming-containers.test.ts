// Exec, attach and port-forward end to end against real containers (runc + conmon, busybox rootfs)
// in a pod with its own network namespace. URLs come from skiffd's Exec/Attach/PortForward RPC
// handlers; the clients are real: kubectl (client-go's SPDY and WebSocket transports, through a
// small kube-apiserver facade that proxies the upgrade as the kubelet's does) and a `ws` client
// speaking the channel protocols directly (v4, v5, base64, port-forward).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { Status, type CallContext } from 'nice-grpc-common';
import { ContainerConfig, ContainerState, ExecRequest, AttachRequest, PortForwardRequest, type DeepPartial } from '../../proto/gen/runtime/v1/api.ts';
import { needs, unavailable, which } from '../support/prereq.ts';
import { makeBusyboxRootfs } from '../support/rootfs.ts';
import { startKubeFacade, type KubeFacade } from '../support/kube-facade.ts';
import { ContainerManager } from '../../node/skiffd/containers/manager.ts';
import { makeOciRuntime } from '../../node/skiffd/oci/index.ts';
import { allCgroupDirs } from '../../node/skiffd/cgroups/layout.ts';
import { parseConfig } from '../../node/skiffd/config.ts';
import { createLogger } from '../../node/skiffd/logger.ts';
import type { DaemonContext } from '../../node/skiffd/context.ts';
import type { PodSandboxRecord } from '../../node/skiffd/pods/types.ts';
import { testPodRecord } from '../support/pods.ts';
import { Streaming } from '../../node/skiffd/streaming/index.ts';
import { execInContainer } from '../../node/skiffd/streaming/backends/exec.ts';
import { runningContainer } from '../../node/skiffd/streaming/backends/targets.ts';
import { ResizeFeed } from '../../node/skiffd/streaming/remotecommand.ts';
import { exec } from '../../node/skiffd/services/runtime/exec.ts';
import { attach } from '../../node/skiffd/services/runtime/attach.ts';
import { portForward } from '../../node/skiffd/services/runtime/port-forward.ts';
import { until } from '../support/wait.ts';
import { httpGetIndex, runCommand, type CommandResult } from '../support/commands.ts';

const IMAGE_ID = `sha256:${'c'.repeat(64)}`;
const COMMANDS = ['runc', 'conmon', 'nsenter', 'busybox', 'script', 'stty', 'ip'];
const call = {} as CallContext;

interface World {
  dir: string;
  netnsName: string;
  cgroupParent: string;
  pod: PodSandboxRecord;
  manager: ContainerManager;
  ctx: DaemonContext;
  ids: Record<string, string>;
  facade: KubeFacade;
}

let world: World | undefined;
let setupError: Error | undefined;

function containerConfig(name: string, command: string[], extra: DeepPartial<ContainerConfig> = {}): ContainerConfig {
  return ContainerConfig.fromPartial({ metadata: { name, attempt: 0 }, image: { image: 'busybox' }, command, logPath: `${name}.log`, ...extra });
}

const canRun = () => COMMANDS.every((c) => which(c)) && process.getuid?.() === 0;

before(async () => {
  if (!canRun()) return;
  try {
    // Short paths: conmon's attach socket path must fit in sockaddr_un.
    const dir = mkdtempSync('/tmp/sks-');
    const rootfs = makeBusyboxRootfs({ parent: dir });
    const tag = randomBytes(4).toString('hex');
    const netnsName = `skst-${tag}`;
    execFileSync('ip', ['netns', 'add', netnsName]);
    execFileSync('ip', ['netns', 'exec', netnsName, 'ip', 'link', 'set', 'lo', 'up']);
    const cgroupParent = `/skiff-stream-${tag}`;
    const pod = testPodRecord({
      metadata: { name: 'web', uid: `uid-${tag}`, namespace: 'default', attempt: 0 },
      logDirectory: join(dir, 'logs'),
      hostname: 'web',
      namespaces: { net: `/run/netns/${netnsName}` },
      networkMode: 'POD',
      cgroupParent,
    });
    const pods = { get: (id: string) => (id === pod.id ? pod : undefined), list: () => [pod], withLock: <T>(_id: string, fn: () => Promise<T>) => fn() };
    const manager = new ContainerManager({
      root: join(dir, 'root'),
      state: join(dir, 'state'),
      runtime: makeOciRuntime({ root: join(dir, 'state', 'runc') }),
      pods,
      images: {
        resolve: (name) =>
          name === 'busybox' ? { id: IMAGE_ID, ref: `example.test/busybox@${IMAGE_ID}`, layers: [rootfs.dir], config: { cmd: ['sh'] } } : undefined,
      },
    });
    await manager.init();
    const config = parseConfig('[streaming]\naddress = "127.0.0.1"\nport = 0\n');
    const log = createLogger(process.env.SKIFF_TEST_DEBUG ? 'debug' : 'warn');
    const ctx = {
      config,
      log,
      startedAt: new Date(),
      network: { podCidr: '' },
      images: undefined,
      pods,
      containers: manager,
      streaming: new Streaming({ config: config.streaming, log, containers: manager, pods }),
    } as unknown as DaemonContext;

    const ids: Record<string, string> = {};
    const specs: Record<string, ContainerConfig> = {
      shell: containerConfig('shell', [
        'sh',
        '-c',
        'mkdir -p /www && echo hello-from-pod > /www/index.html && httpd -p 8080 -h /www && httpd -p 8081 -h /www && exec sleep 3600',
      ]),
      echo: containerConfig('echo', ['sh', '-c', 'while read line; do echo "got $line"; echo "err $line" >&2; done; echo "stdin closed"'], {
        stdin: true,
        stdinOnce: true,
      }),
      echo2: containerConfig('echo2', ['sh', '-c', 'while read line; do echo "got $line"; done; echo "stdin closed"'], { stdin: true, stdinOnce: true }),
      term: containerConfig('term', ['sh'], { stdin: true, tty: true }),
    };
    for (const [name, spec] of Object.entries(specs)) {
      ids[name] = await manager.create({ podSandboxId: pod.id, config: spec, sandboxConfig: undefined });
      await manager.start(ids[name]);
    }
    for (const id of Object.values(ids))
      await until(`container ${id.slice(0, 12)} running`, async () => (await manager.status(id)).state === ContainerState.CONTAINER_RUNNING);

    const facade = await startKubeFacade(
      [
        {
          name: 'web',
          containers: [
            { name: 'shell' },
            { name: 'echo', stdin: true, stdinOnce: true },
            { name: 'echo2', stdin: true, stdinOnce: true },
            { name: 'term', stdin: true, tty: true },
          ],
        },
      ],
      {
        exec: async (o) =>
          (
            await exec(
              ctx,
              ExecRequest.fromPartial({ containerId: ids[o.container], cmd: o.command, tty: o.tty, stdin: o.stdin, stdout: o.stdout, stderr: o.stderr }),
              call,
            )
          ).url!,
        attach: async (o) =>
          (
            await attach(
              ctx,
              AttachRequest.fromPartial({ containerId: ids[o.container], tty: o.tty, stdin: o.stdin, stdout: o.stdout, stderr: o.stderr }),
              call,
            )
          ).url!,
        portForward: async (o) => (await portForward(ctx, PortForwardRequest.fromPartial({ podSandboxId: pod.id, port: o.ports }), call)).url!,
      },
    );
    world = { dir, netnsName, cgroupParent, pod, manager, ctx, ids, facade };
    // httpd daemonizes inside the container; wait until it answers in the pod's namespace.
    await until('httpd in the pod', () => {
      try {
        return execFileSync('ip', ['netns', 'exec', netnsName, 'busybox', 'wget', '-q', '-O', '-', 'http://127.0.0.1:8080/'], {
          encoding: 'utf8',
          timeout: 3000,
        }).includes('hello-from-pod');
      } catch {
        return false;
      }
    });
  } catch (err) {
    setupError = err as Error;
  }
});

after(async () => {
  if (!world) return;
  const w = world;
  await w.facade.close();
  await w.ctx.streaming.close();
  for (const v of await w.manager.list()) await w.manager.remove(v.record.id).catch(() => {});
  await w.manager.close();
  try {
    execFileSync('ip', ['netns', 'del', w.netnsName]);
  } catch {
    /* already gone */
  }
  for (const d of allCgroupDirs(w.cgroupParent)) {
    for (let i = 0; existsSync(d) && i < 50; i++) {
      try {
        rmdirSync(d);
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
  rmSync(w.dir, { recursive: true, force: true });
});

function ready(t: import('node:test').TestContext, extra: string[] = []): World | undefined {
  if (!needs(t, { root: true, commands: [...COMMANDS, ...extra] })) return undefined;
  if (setupError) throw setupError;
  return world!;
}

const SPDY = { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false', KUBECTL_PORT_FORWARD_WEBSOCKETS: 'false' };
const WEBSOCKET = { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'true' };

function kubectl(w: World, args: string[], options: { env?: Record<string, string>; input?: string; timeoutMs?: number } = {}): Promise<CommandResult> {
  return runCommand('kubectl', ['--server', w.facade.url, ...args], options);
}

/** kubectl's minor version: WebSocket remotecommand needs 1.30 or later. */
function kubectlMinor(): number {
  const out = execFileSync('kubectl', ['version', '--client', '-o', 'json'], { encoding: 'utf8' });
  return Number((JSON.parse(out) as { clientVersion: { minor: string } }).clientVersion.minor.replace(/\D/g, ''));
}

test('streaming: kubectl exec over SPDY: output, stderr, non-zero exit code, stdin with EOF', { timeout: 60_000 }, async (t) => {
  const w = ready(t, ['kubectl']);
  if (!w) return;
  const before = w.facade.upgrades.length;
  const r = await kubectl(w, ['exec', 'web', '-c', 'shell', '--', 'sh', '-c', 'echo out-line; echo err-line >&2; exit 3'], { env: SPDY });
  assert.equal(r.code, 3, `exit code 3 expected; stderr: ${r.stderr}`);
  assert.equal(r.stdout, 'out-line\n');
  assert.match(r.stderr, /err-line/);
  const ok = await kubectl(w, ['exec', 'web', '-c', 'shell', '--', 'sh', '-c', 'echo fine'], { env: SPDY });
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(ok.stdout, 'fine\n');
  const piped = await kubectl(w, ['exec', '-i', 'web', '-c', 'shell', '--', 'sh', '-c', 'tr a-z A-Z; echo done'], {
    env: SPDY,
    input: 'hello through stdin\n',
  });
  assert.equal(piped.code, 0, piped.stderr);
  assert.equal(piped.stdout, 'HELLO THROUGH STDIN\ndone\n');
  const missing = await kubectl(w, ['exec', 'web', '-c', 'shell', '--', 'no-such-command'], { env: SPDY });
  assert.notEqual(missing.code, 0);
  assert.match(missing.stderr, /error: .*executable file not found/, 'a command that cannot start is an error, not an exit code');
  const used = w.facade.upgrades.slice(before);
  assert.equal(used.length, 4);
  for (const u of used) assert.equal(u.upgrade.toLowerCase(), 'spdy/3.1');
});

test('streaming: kubectl exec over WebSocket (v5.channel.k8s.io): exit code and stdin EOF', { timeout: 60_000 }, async (t) => {
  const w = ready(t, ['kubectl']);
  if (!w) return;
  if (kubectlMinor() < 30) {
    unavailable(t, 'this kubectl predates WebSocket exec (1.30); install kubectl 1.30 or newer');
    return;
  }
  const before = w.facade.upgrades.length;
  const r = await kubectl(w, ['exec', 'web', '-c', 'shell', '--', 'sh', '-c', 'echo ws-out; echo ws-err >&2; exit 42'], { env: WEBSOCKET });
  assert.equal(r.code, 42, r.stderr);
  assert.equal(r.stdout, 'ws-out\n');
  assert.match(r.stderr, /ws-err/);
  const piped = await kubectl(w, ['exec', '-i', 'web', '-c', 'shell', '--', 'sh', '-c', 'wc -l; echo after-eof'], { env: WEBSOCKET, input: 'a\nb\nc\n' });
  assert.equal(piped.code, 0, piped.stderr);
  assert.equal(piped.stdout.replace(/ +/g, ''), '3\nafter-eof\n');
  const used = w.facade.upgrades.slice(before);
  assert.equal(used.length, 2);
  for (const u of used) {
    assert.equal(u.upgrade.toLowerCase(), 'websocket');
    assert.match(u.protocols, /v5\.channel\.k8s\.io/);
  }
});

test('streaming: kubectl exec -ti gets a real terminal sized like the client', { timeout: 120_000 }, async (t) => {
  const w = ready(t, ['kubectl']);
  if (!w) return;
  // script(1) gives kubectl a terminal of a known size; kubectl sends it on the resize stream.
  for (const env of [SPDY, ...(kubectlMinor() >= 30 ? [WEBSOCKET] : [])]) {
    // runc applies the size to the container's pty just after the process starts, and a size that
    // reaches skiffd after the command started comes as a resize: wait for it (up to 30 s).
    const probe = 'tty; i=0; while [ "$(stty size 2>/dev/null)" != "33 101" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; stty size; exit 5';
    const inner = `stty rows 33 cols 101; kubectl --server ${w.facade.url} exec -ti web -c shell -- sh -c '${probe}'`;
    const r = await runCommand('script', ['-qfec', inner, '/dev/null'], { env, holdStdin: true, timeoutMs: 45_000 });
    assert.equal(r.code, 5, `exit code 5 expected (${JSON.stringify(env)}): ${r.stdout} ${r.stderr}`);
    assert.match(r.stdout, /\/dev\/pts\/\d+/, 'the command sees a terminal');
    assert.match(r.stdout, /33 101/, `the terminal has the client's size: ${JSON.stringify(r.stdout)}`);
  }
});

test('streaming: kubectl attach -i to a container echoing its stdin; stdin EOF closes it (StdinOnce)', { timeout: 60_000 }, async (t) => {
  const w = ready(t, ['kubectl']);
  if (!w) return;
  const r = await kubectl(w, ['attach', '-i', 'web', '-c', 'echo'], { env: SPDY, input: 'one\ntwo\n' });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /got one\ngot two\n/);
  assert.match(r.stdout, /stdin closed/, 'the container saw EOF on its stdin');
  assert.match(r.stderr, /err one/, 'stderr comes back on its own stream');
  const view = await until('echo container to exit', async () => {
    const v = await w.manager.status(w.ids.echo);
    return v.state === ContainerState.CONTAINER_EXITED ? v : undefined;
  });
  assert.equal(view.record.exitCode, 0);

  if (kubectlMinor() >= 30) {
    const before = w.facade.upgrades.length;
    const ws = await kubectl(w, ['attach', '-i', 'web', '-c', 'echo2'], { env: WEBSOCKET, input: 'three\n' });
    assert.equal(ws.code, 0, ws.stderr);
    assert.match(ws.stdout, /got three\n[^]*stdin closed/);
    assert.equal(w.facade.upgrades[before]?.upgrade.toLowerCase(), 'websocket');
  }
});

test('streaming: kubectl port-forward over SPDY: two ports, concurrent connections, an HTTP server in the pod', { timeout: 60_000 }, async (t) => {
  const w = ready(t, ['kubectl']);
  if (!w) return;
  const child = spawn('kubectl', ['--server', w.facade.url, 'port-forward', 'pod/web', ':8080', ':8081'], {
    env: { ...process.env, ...SPDY },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => child.kill('SIGKILL'));
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
  const ports = await until(
    'kubectl port-forward to listen',
    () => {
      const m = [...out.matchAll(/Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)/g)];
      return m.length >= 2 ? Object.fromEntries(m.map((x) => [x[2], Number(x[1])])) : undefined;
    },
    15_000,
  );
  const bodies = await Promise.all([httpGetIndex(ports['8080']), httpGetIndex(ports['8080']), httpGetIndex(ports['8081']), httpGetIndex(ports['8080'])]);
  for (const b of bodies) assert.equal(b, 'hello-from-pod\n');
  assert.equal(
    w.facade.upgrades
      .filter((u) => u.kind === 'portforward')
      .at(-1)
      ?.upgrade.toLowerCase(),
    'spdy/3.1',
  );
});

test('streaming: kubectl port-forward over WebSocket (SPDY tunnelled in WebSocket, kubectl 1.31+)', { timeout: 60_000 }, async (t) => {
  const w = ready(t, ['kubectl']);
  if (!w) return;
  if (kubectlMinor() < 31) {
    unavailable(t, 'this kubectl predates WebSocket port-forward (1.31); install kubectl 1.31 or newer');
    return;
  }
  const child = spawn('kubectl', ['--server', w.facade.url, 'port-forward', 'pod/web', ':8081'], {
    env: { ...process.env, KUBECTL_PORT_FORWARD_WEBSOCKETS: 'true' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => child.kill('SIGKILL'));
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
  const port = await until('kubectl port-forward to listen', () => Number(/Forwarding from 127\.0\.0\.1:(\d+) -> 8081/.exec(out)?.[1] ?? 0), 15_000);
  const bodies = await Promise.all([httpGetIndex(port), httpGetIndex(port)]);
  for (const b of bodies) assert.equal(b, 'hello-from-pod\n');
  const used = w.facade.upgrades.filter((u) => u.kind === 'portforward').at(-1);
  assert.equal(used?.upgrade.toLowerCase(), 'websocket', JSON.stringify(w.facade.upgrades.filter((u) => u.kind === 'portforward')) + out);
  assert.match(used?.protocols ?? '', /SPDY\/3\.1\+portforward\.k8s\.io/);
});

/** A raw channel-protocol client: collects what arrives per channel until the server closes. */
function channelClient(url: string, protocol: string) {
  const base64 = protocol.includes('base64');
  const ws = new WebSocket(url, protocol ? [protocol] : []);
  const received = new Map<number, Buffer[]>();
  const messages: { channel: number; data: Buffer }[] = [];
  ws.on('message', (raw: Buffer, isBinary: boolean) => {
    let channel: number;
    let data: Buffer;
    if (base64 && !isBinary) {
      channel = raw[0] - 0x30;
      data = Buffer.from(raw.subarray(1).toString(), 'base64');
    } else {
      channel = raw[0];
      data = raw.subarray(1);
    }
    messages.push({ channel, data });
    received.set(channel, [...(received.get(channel) ?? []), data]);
  });
  const opened = new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: HTTP ${res.statusCode}`)));
    ws.once('error', reject);
  });
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  return {
    ws,
    opened,
    closed,
    messages,
    text: (channel: number) => Buffer.concat(received.get(channel) ?? []).toString(),
    send(channel: number, data: string | Buffer) {
      const body = typeof data === 'string' ? Buffer.from(data) : data;
      if (base64) ws.send(String.fromCharCode(0x30 + channel) + body.toString('base64'));
      else ws.send(Buffer.concat([Buffer.from([channel]), body]));
    },
    waitFor: (what: string, fn: () => boolean, ms = 10_000) => until(what, () => fn(), ms),
  };
}

async function withDeadline<T>(what: string, p: Promise<T>, ms = 15_000): Promise<T> {
  let timer: NodeJS.Timeout;
  const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms)));
  try {
    return await Promise.race([p, deadline]);
  } finally {
    clearTimeout(timer!);
  }
}

/**
 * Asks the shell on a terminal for its size until the answer is `want`, within a bound. A resize and
 * the typed `stty size` travel on independent streams, so one answer may predate the resize: ask
 * again rather than bet on an order. Each ask waits for its answer (or a few seconds) before the next.
 */
async function untilTerminalSize(term: { output: () => string; type: (text: string) => void }, want: string, what: string, timeoutMs = 30_000): Promise<void> {
  const answers = () => [...term.output().matchAll(/^(\d+ \d+)\r*$/gm)].map((m) => m[1]);
  const deadline = Date.now() + timeoutMs;
  let last = 'none';
  while (Date.now() < deadline) {
    const asked = answers().length;
    term.type('stty size\n');
    // A line typed before the session is wired up gets no answer: after a while, type it again.
    const answer = await until('an answer to stty size', () => answers()[asked], Math.min(5_000, Math.max(0, deadline - Date.now()))).catch(() => undefined);
    if (answer === undefined) continue;
    last = answer;
    if (answer === want) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`${what}: the terminal should say "${want}"; its last answer within ${timeoutMs} ms was "${last}"; output: ${JSON.stringify(term.output())}`);
}

async function execUrl(w: World, cmd: string[], o: { tty?: boolean; stdin?: boolean } = {}): Promise<string> {
  return (await exec(w.ctx, ExecRequest.fromPartial({ containerId: w.ids.shell, cmd, tty: !!o.tty, stdin: !!o.stdin, stdout: true, stderr: !o.tty }), call))
    .url!;
}

test('streaming: WebSocket channel protocols v4, base64 and v5 report exit codes as metav1.Status', { timeout: 60_000 }, async (t) => {
  const w = ready(t);
  if (!w) return;
  for (const protocol of ['v4.channel.k8s.io', 'v4.base64.channel.k8s.io', 'v5.channel.k8s.io']) {
    const c = channelClient(await execUrl(w, ['sh', '-c', 'echo to-out; echo to-err >&2; exit 7']), protocol);
    await withDeadline(`${protocol} open`, c.opened);
    assert.equal(await withDeadline(`${protocol} close`, c.closed), 1000);
    assert.equal(c.text(1), 'to-out\n', protocol);
    assert.equal(c.text(2), 'to-err\n', protocol);
    const status = JSON.parse(c.text(3)) as { status: string; reason: string; details: { causes: { reason: string; message: string }[] } };
    assert.equal(status.status, 'Failure');
    assert.equal(status.reason, 'NonZeroExitCode');
    assert.deepEqual(status.details.causes, [{ reason: 'ExitCode', message: '7' }]);
  }
  const ok = channelClient(await execUrl(w, ['true']), 'v4.channel.k8s.io');
  await withDeadline('success close', ok.closed);
  assert.deepEqual(JSON.parse(ok.text(3)), { metadata: {}, status: 'Success' });

  // Sessions side by side keep their own output and exit codes.
  const many = await Promise.all(
    [11, 12, 13, 14, 15].map(async (code) => {
      const c = channelClient(await execUrl(w, ['sh', '-c', `sleep 0.2; echo session-${code}; exit ${code}`]), 'v5.channel.k8s.io');
      await withDeadline(`session ${code}`, c.closed);
      return [c.text(1), (JSON.parse(c.text(3)) as { details: { causes: { message: string }[] } }).details.causes[0].message];
    }),
  );
  assert.deepEqual(
    many,
    [11, 12, 13, 14, 15].map((code) => [`session-${code}\n`, String(code)]),
  );
});

test('streaming: WebSocket exec with a TTY follows every resize; v5 closes stdin', { timeout: 60_000 }, async (t) => {
  const w = ready(t);
  if (!w) return;
  const c = channelClient(await execUrl(w, ['sh'], { tty: true, stdin: true }), 'v5.channel.k8s.io');
  await withDeadline('open', c.opened);
  const term = { output: () => c.text(1), type: (text: string) => c.send(0, text) };
  c.send(4, JSON.stringify({ Width: 80, Height: 20 }));
  await untilTerminalSize(term, '20 80', 'first size');
  c.send(4, JSON.stringify({ Width: 132, Height: 43 }));
  await untilTerminalSize(term, '43 132', 'second size');
  c.send(0, 'exit 4\n');
  await withDeadline('close', c.closed);
  assert.equal((JSON.parse(c.text(3)) as { details: { causes: { message: string }[] } }).details.causes[0].message, '4');

  // v5: the close message for channel 0 is the client's stdin EOF.
  const cat = channelClient(await execUrl(w, ['sh', '-c', 'cat; echo eof-seen'], { stdin: true }), 'v5.channel.k8s.io');
  await withDeadline('open', cat.opened);
  cat.send(0, 'payload\n');
  cat.send(255, Buffer.from([0]));
  await withDeadline('close after stdin EOF', cat.closed);
  assert.equal(cat.text(1), 'payload\neof-seen\n');
});

test('streaming: attach to a TTY container over WebSocket; resize through conmon', { timeout: 60_000 }, async (t) => {
  const w = ready(t);
  if (!w) return;
  const url = (await attach(w.ctx, AttachRequest.fromPartial({ containerId: w.ids.term, tty: true, stdin: true, stdout: true }), call)).url!;
  const c = channelClient(url, 'v4.channel.k8s.io');
  await withDeadline('open', c.opened);
  c.send(4, JSON.stringify({ Width: 90, Height: 30 }));
  await untilTerminalSize({ output: () => c.text(1), type: (text) => c.send(0, text) }, '30 90', 'size through the ctl FIFO');
  c.ws.close();
  await withDeadline('client close', c.closed);
  assert.equal((await w.manager.status(w.ids.term)).state, ContainerState.CONTAINER_RUNNING, 'detaching leaves the container running');
});

test('streaming: two resizes sent at once, as kubectl attach sends them, leave the terminal at the second, even after conmon stalled for seconds', {
  timeout: 90_000,
}, async (t) => {
  const w = ready(t);
  if (!w) return;
  // conmon paused while both arrive, so they wait in its ctl FIFO together and one read takes both;
  // then paused for longer than a second, as a loaded node can leave it unscheduled.
  for (const [stallMs, width] of [
    [150, 122],
    [2500, 118],
  ]) {
    const url = (await attach(w.ctx, AttachRequest.fromPartial({ containerId: w.ids.term, tty: true, stdin: true, stdout: true }), call)).url!;
    const c = channelClient(url, 'v4.channel.k8s.io');
    await withDeadline('open', c.opened);
    const conmonPid = (await w.manager.status(w.ids.term)).record.conmonPid!;
    process.kill(conmonPid, 'SIGSTOP');
    try {
      c.send(4, JSON.stringify({ Width: width + 1, Height: 45 }));
      c.send(4, JSON.stringify({ Width: width, Height: 44 }));
      await new Promise((r) => setTimeout(r, stallMs));
    } finally {
      process.kill(conmonPid, 'SIGCONT');
    }
    await untilTerminalSize({ output: () => c.text(1), type: (text) => c.send(0, text) }, `44 ${width}`, `the second size after a ${stallMs} ms stall`);
    c.ws.close();
    await withDeadline('client close', c.closed);
  }
});

test('streaming: WebSocket port-forward: port headers, data both ways, connection errors on the error channel', { timeout: 60_000 }, async (t) => {
  const w = ready(t);
  if (!w) return;
  const url = (await portForward(w.ctx, PortForwardRequest.fromPartial({ podSandboxId: w.pod.id, port: [] }), call)).url!;
  const c = channelClient(`${url}?port=8080&port=8081&port=9`, 'v4.channel.k8s.io');
  await withDeadline('open', c.opened);
  await withDeadline(
    'port headers',
    c.waitFor('six port headers', () => c.messages.length >= 6),
  );
  const headers = c.messages.slice(0, 6).map((m) => [m.channel, m.data.readUInt16LE(0)]);
  assert.deepEqual(
    headers.sort((a, b) => a[0] - b[0]),
    [
      [0, 8080],
      [1, 8080],
      [2, 8081],
      [3, 8081],
      [4, 9],
      [5, 9],
    ],
  );
  c.send(0, 'GET /index.html HTTP/1.0\r\n\r\n');
  c.send(2, 'GET /index.html HTTP/1.0\r\n\r\n');
  const body = (ch: number) =>
    c.messages
      .filter((m) => m.channel === ch)
      .slice(1)
      .map((m) => m.data.toString())
      .join('');
  await withDeadline(
    'both responses',
    c.waitFor('responses', () => body(0).includes('hello-from-pod') && body(2).includes('hello-from-pod')),
  );
  await withDeadline(
    'error for the closed port',
    c.waitFor('error on channel 5', () => /refused/i.test(body(5))),
  );
  c.ws.close();
  await withDeadline('close', c.closed);
});

test('streaming: a streaming URL works once; a reused token is refused', { timeout: 30_000 }, async (t) => {
  const w = ready(t);
  if (!w) return;
  const url = await execUrl(w, ['echo', 'once']);
  const first = channelClient(url, 'v4.channel.k8s.io');
  await withDeadline('first use', first.closed);
  assert.equal(first.text(1), 'once\n');
  const second = channelClient(url, 'v4.channel.k8s.io');
  await assert.rejects(withDeadline('second use', second.opened), /HTTP 404/);
  second.ws.terminate();
});

test('streaming: Exec, Attach and PortForward refuse bad requests with the right gRPC status', { timeout: 30_000 }, async (t) => {
  const w = ready(t);
  if (!w) return;
  const code = async (p: Promise<unknown>) => {
    try {
      await p;
    } catch (err) {
      return (err as { code?: Status }).code;
    }
    return 'ok';
  };
  const shell = w.ids.shell;
  assert.equal(await code(exec(w.ctx, ExecRequest.fromPartial({ containerId: shell, cmd: ['true'] }), call)), Status.INVALID_ARGUMENT, 'no stream asked for');
  assert.equal(await code(exec(w.ctx, ExecRequest.fromPartial({ containerId: shell, cmd: [], stdout: true }), call)), Status.INVALID_ARGUMENT, 'no command');
  assert.equal(
    await code(exec(w.ctx, ExecRequest.fromPartial({ containerId: shell, cmd: ['sh'], tty: true, stdout: true, stderr: true }), call)),
    Status.INVALID_ARGUMENT,
    'tty with stderr',
  );
  assert.equal(await code(exec(w.ctx, ExecRequest.fromPartial({ containerId: 'f'.repeat(64), cmd: ['true'], stdout: true }), call)), Status.NOT_FOUND);
  assert.equal(await code(attach(w.ctx, AttachRequest.fromPartial({ containerId: 'f'.repeat(64), stdout: true }), call)), Status.NOT_FOUND);
  assert.equal(await code(portForward(w.ctx, PortForwardRequest.fromPartial({ podSandboxId: 'f'.repeat(64), port: [80] }), call)), Status.NOT_FOUND);
  assert.equal(await code(portForward(w.ctx, PortForwardRequest.fromPartial({ podSandboxId: w.pod.id, port: [70000] }), call)), Status.INVALID_ARGUMENT);
  // A container that has exited takes no exec.
  const done = await w.manager.create({ podSandboxId: w.pod.id, config: containerConfig('done', ['true']), sandboxConfig: undefined });
  await w.manager.start(done);
  await until('container "done" to exit', async () => (await w.manager.status(done)).state === ContainerState.CONTAINER_EXITED);
  assert.equal(await code(exec(w.ctx, ExecRequest.fromPartial({ containerId: done, cmd: ['true'], stdout: true }), call)), Status.FAILED_PRECONDITION);
  const ok = await exec(w.ctx, ExecRequest.fromPartial({ containerId: shell.slice(0, 12), cmd: ['true'], stdout: true }), call);
  assert.match(ok.url!, /^http:\/\/127\.0\.0\.1:\d+\/exec\/[A-Za-z0-9_-]+$/, 'a unique id prefix is accepted');
});

test('streaming: large output arrives whole over SPDY and WebSocket; a vanished client ends its command', { timeout: 60_000 }, async (t) => {
  const w = ready(t, ['kubectl']);
  if (!w) return;
  const big = ['exec', 'web', '-c', 'shell', '--', 'sh', '-c', 'head -c 3000000 /dev/zero | tr "\\0" x; echo; echo tail-marker'];
  for (const env of [SPDY, ...(kubectlMinor() >= 30 ? [WEBSOCKET] : [])]) {
    const r = await kubectl(w, big, { env, timeoutMs: 30_000 });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.length, 3_000_000 + 1 + 'tail-marker\n'.length, `all output arrived (${JSON.stringify(env)})`);
    assert.ok(r.stdout.endsWith('x\ntail-marker\n'));
  }

  // The client goes away in the middle of a long command: the command must not linger.
  const marker = `sleep ${3000 + (randomBytes(2).readUInt16LE(0) % 1000)}`;
  const c = channelClient(await execUrl(w, marker.split(' ')), 'v5.channel.k8s.io');
  await withDeadline('open', c.opened);
  const running = () =>
    runCommand('runc', ['--root', join(w.dir, 'state', 'runc'), 'exec', w.ids.shell, 'ps', '-o', 'args']).then((r) => r.stdout.includes(marker));
  await until('the exec to start', running);
  c.ws.terminate();
  await until('the exec to be killed after the client left', async () => !(await running()));
});

test('streaming: a client that leaves before runc wrote the pid file still ends its command', { timeout: 90_000 }, async (t) => {
  const w = ready(t);
  if (!w) return;
  // A runc that writes --pid-file 5 s after the command started, as a runc left unscheduled on a
  // loaded node does: the client leaves in between.
  const realRunc = which('runc')!;
  const wrapper = join(w.dir, 'slow-pid-file.mjs');
  writeFileSync(
    wrapper,
    `import { spawn } from 'node:child_process';
import { existsSync, renameSync } from 'node:fs';
const args = process.argv.slice(2);
const at = args.indexOf('--pid-file');
const pidFile = args[at + 1];
args[at + 1] = pidFile + '.late';
const runc = spawn(${JSON.stringify(realRunc)}, args, { stdio: 'inherit' });
const poll = setInterval(() => {
  if (!existsSync(pidFile + '.late')) return;
  clearInterval(poll);
  setTimeout(() => renameSync(pidFile + '.late', pidFile), 5000);
}, 10);
runc.on('exit', (code) => process.exit(code ?? 1));
`,
  );
  const runtimePath = join(w.dir, 'slow-runc');
  writeFileSync(runtimePath, `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(wrapper)} "$@"\n`, { mode: 0o755 });
  const target = { ...(await runningContainer(w.manager, w.ids.shell)), runtimePath };
  const marker = `sleep ${5000 + (randomBytes(2).readUInt16LE(0) % 1000)}`;
  const abort = new AbortController();
  const stdout = new PassThrough().resume();
  const running = () =>
    runCommand('runc', ['--root', join(w.dir, 'state', 'runc'), 'exec', w.ids.shell, 'ps', '-o', 'args']).then((r) => r.stdout.includes(marker));
  const session = execInContainer(
    target,
    { kind: 'exec', containerId: w.ids.shell, cmd: marker.split(' '), tty: false, stdin: false, stdout: true, stderr: false },
    { stdout, resize: new ResizeFeed(false), signal: abort.signal },
  ).catch(() => -1);
  await until('the command to start', running);
  abort.abort();
  await session;
  await until('the command to be killed after the client left', async () => !(await running()));
});

test('streaming: interactive kubectl exec -ti follows terminal resizes mid-session (SPDY and WebSocket)', { timeout: 90_000 }, async (t) => {
  const w = ready(t, ['kubectl']);
  if (!w) return;
  for (const env of [SPDY, ...(kubectlMinor() >= 30 ? [WEBSOCKET] : [])]) {
    // kubectl runs on a terminal that script(1) provides; resizing that terminal from outside sends
    // kubectl SIGWINCH, as a user resizing a window would.
    const inner = `stty rows 33 cols 101; exec kubectl --server ${w.facade.url} exec -ti web -c shell -- sh`;
    const child = spawn('script', ['-qfec', inner, '/dev/null'], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    t.after(() => child.kill('SIGKILL'));
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    const term = { output: () => out, type: (text: string) => child.stdin.write(text) };
    await until('the shell prompt', () => out.includes('# '), 15_000).catch((err: Error) => assert.fail(`${err.message}; output: ${JSON.stringify(out)}`));
    await untilTerminalSize(term, '33 101', `the initial size (${JSON.stringify(env)})`);
    const kubectlPid = await until('kubectl to run', async () => {
      const r = await runCommand('pgrep', ['-P', String(child.pid), '-f', 'kubectl']);
      return Number(r.stdout.trim().split('\n')[0]) || undefined;
    });
    const { readlinkSync } = await import('node:fs');
    const pty = readlinkSync(`/proc/${kubectlPid}/fd/0`);
    // Two size changes (rows, then cols): kubectl may send one resize or two; the last must stick.
    await runCommand('stty', ['-F', pty, 'rows', '41', 'cols', '127']);
    await untilTerminalSize(term, '41 127', `the size after a resize (${JSON.stringify(env)})`);
    child.stdin.write('exit 6\n');
    assert.equal(await withDeadline('kubectl to exit', exited), 6);
  }
});

test('streaming: kubectl attach -ti to a TTY container: initial size and resizes reach it through conmon (SPDY)', { timeout: 60_000 }, async (t) => {
  const w = ready(t, ['kubectl']);
  if (!w) return;
  const inner = `stty rows 29 cols 97; exec kubectl --server ${w.facade.url} attach -ti web -c term`;
  const child = spawn('script', ['-qfec', inner, '/dev/null'], { env: { ...process.env, ...SPDY }, stdio: ['pipe', 'pipe', 'pipe'] });
  t.after(() => child.kill('SIGKILL'));
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
  const kubectlPid = await until(
    'kubectl to run',
    async () => Number((await runCommand('pgrep', ['-P', String(child.pid), '-f', 'kubectl'])).stdout.trim().split('\n')[0]) || undefined,
  );
  // The attach may not be wired up when the first line is typed: untilTerminalSize asks again.
  const term = { output: () => out, type: (text: string) => child.stdin.write(text) };
  await untilTerminalSize(term, '29 97', 'the initial size');
  const { readlinkSync } = await import('node:fs');
  await runCommand('stty', ['-F', readlinkSync(`/proc/${kubectlPid}/fd/0`), 'rows', '37', 'cols', '111']);
  await untilTerminalSize(term, '37 111', 'the size after a resize');
  child.kill('SIGKILL');
  assert.equal((await w.manager.status(w.ids.term)).state, ContainerState.CONTAINER_RUNNING);
});

test('streaming: SPDY remotecommand v3, v2 and the pre-negotiation v1: text on the error stream, v3 resize', { timeout: 60_000 }, async (t) => {
  const w = ready(t);
  if (!w) return;
  const { spdyRemoteCommand } = await import('../support/spdy-client.ts');
  for (const protocols of [['v3.channel.k8s.io'], ['v2.channel.k8s.io'], []]) {
    const url = await execUrl(w, ['sh', '-c', 'cat; echo out; echo err >&2; exit 3'], { stdin: true });
    const r = await spdyRemoteCommand(url, { protocols, streamTypes: ['error', 'stdin', 'stdout', 'stderr'], stdin: 'in-data\n' });
    assert.equal(r.status, 101);
    assert.equal(r.negotiated, protocols[0], 'the server names the protocol it picked (none for a client that offered none)');
    assert.equal(r.streams.stdout, 'in-data\nout\n', JSON.stringify(protocols));
    assert.equal(r.streams.stderr, 'err\n');
    assert.match(r.streams.error, /^command terminated with non-zero exit code: exit status 3$/, 'before v4 the error stream is plain text');
  }
  const probe = 'i=0; while [ "$(stty size 2>/dev/null)" != "22 77" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; stty size';
  const tty = await spdyRemoteCommand(await execUrl(w, ['sh', '-c', probe], { tty: true }), {
    protocols: ['v3.channel.k8s.io'],
    streamTypes: ['error', 'stdout', 'resize'],
    resize: { Width: 77, Height: 22 },
    timeoutMs: 45_000,
  });
  assert.match(tty.streams.stdout, /22 77/);
  assert.equal(tty.streams.error ?? '', '', 'success is silence before v4');
});

test('streaming: kubectl cp moves binary data both ways intact (tar over exec stdin/stdout)', { timeout: 60_000 }, async (t) => {
  const w = ready(t, ['kubectl']);
  if (!w) return;
  const { createHash } = await import('node:crypto');
  const { writeFileSync, readFileSync } = await import('node:fs');
  const local = join(w.dir, 'blob.bin');
  const data = randomBytes(1_500_000);
  writeFileSync(local, data);
  const sum = createHash('md5').update(data).digest('hex');
  for (const env of [SPDY, ...(kubectlMinor() >= 30 ? [WEBSOCKET] : [])]) {
    const up = await kubectl(w, ['cp', '-c', 'shell', local, 'web:/tmp/blob.bin'], { env, timeoutMs: 30_000 });
    assert.equal(up.code, 0, up.stderr);
    const inPod = await kubectl(w, ['exec', 'web', '-c', 'shell', '--', 'md5sum', '/tmp/blob.bin'], { env });
    assert.equal(inPod.stdout.split(' ')[0], sum, `uploaded bytes intact (${JSON.stringify(env)})`);
    const back = join(w.dir, 'blob-back.bin');
    const down = await kubectl(w, ['cp', '-c', 'shell', 'web:/tmp/blob.bin', back], { env, timeoutMs: 30_000 });
    assert.equal(down.code, 0, down.stderr);
    assert.equal(createHash('md5').update(readFileSync(back)).digest('hex'), sum, 'downloaded bytes intact');
  }
});
