// Exec, attach and port-forward end to end against real containers (runc + conmon, busybox rootfs)
// in a pod with its own network namespace. URLs come from skiffd's Exec/Attach/PortForward RPC
// handlers; the clients speak the channel protocols directly (a `ws` client for v4, v5, base64 and
// port-forward; our SPDY client for the older remotecommand versions), so each frame and edge case
// can be checked. kubectl's own sessions run through a real cluster in cluster-streaming.test.ts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { Status, type CallContext } from 'nice-grpc-common';
import { ContainerConfig, ContainerState, ExecRequest, AttachRequest, PortForwardRequest, type DeepPartial } from '../../proto/gen/runtime/v1/api.ts';
import { needs, which } from '../support/prereq.ts';
import { makeBusyboxRootfs } from '../support/rootfs.ts';
import { untilTerminalSize, withDeadline } from '../support/terminal.ts';
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
import { execTarget } from '../../node/skiffd/streaming/backends/targets.ts';
import { ResizeFeed } from '../../node/skiffd/streaming/remotecommand.ts';
import { exec } from '../../node/skiffd/services/runtime/exec.ts';
import { attach } from '../../node/skiffd/services/runtime/attach.ts';
import { portForward } from '../../node/skiffd/services/runtime/port-forward.ts';
import { until } from '../support/wait.ts';
import { runCommand } from '../support/commands.ts';

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

    world = { dir, netnsName, cgroupParent, pod, manager, ctx, ids };
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

test('streaming: a client that vanishes in the middle of a long command ends it', { timeout: 60_000 }, async (t) => {
  const w = ready(t);
  if (!w) return;
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
  const target = { ...(await execTarget(w.manager, w.ids.shell)), runtimePath };
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
