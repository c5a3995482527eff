// Attach to a container that writes fast while the client does not read: skiffd must not hold the
// output without bound. The attach add-on reads conmon's socket whenever it is readable (it cannot
// be paused), so skiffd ends a session whose client has left MAX_UNREAD_OUTPUT unread; what it
// read from conmon stays near that, far below what the container wrote.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { PassThrough, Writable } from 'node:stream';
import { ContainerConfig, ContainerState } from '../../proto/gen/runtime/v1/api.ts';
import { which } from '../support/prereq.ts';
import { makeBusyboxRootfs } from '../support/rootfs.ts';
import { ContainerManager } from '../../node/skiffd/containers/manager.ts';
import { makeOciRuntime } from '../../node/skiffd/oci/index.ts';
import { allCgroupDirs } from '../../node/skiffd/cgroups/layout.ts';
import type { PodSandboxRecord } from '../../node/skiffd/pods/types.ts';
import { testPodRecord } from '../support/pods.ts';
import { makeStreamingBackend } from '../../node/skiffd/streaming/backends/index.ts';
import { MAX_UNREAD_OUTPUT } from '../../node/skiffd/streaming/backends/attach.ts';
import { SeqpacketSocket, seqpacketMissing } from '../../node/skiffd/streaming/backends/seqpacket.ts';
import { ResizeFeed } from '../../node/skiffd/streaming/remotecommand.ts';
import { unavailable } from '../support/prereq.ts';
import { until } from '../support/wait.ts';

const IMAGE_ID = `sha256:${'d'.repeat(64)}`;
const OUTPUT = 64 * 1024 * 1024;
const canRun = () => ['runc', 'conmon', 'busybox'].every((c) => which(c)) && process.getuid?.() === 0 && !seqpacketMissing();

let world: { dir: string; cgroupParent: string; pod: PodSandboxRecord; manager: ContainerManager; id: string } | undefined;
let setupError: Error | undefined;

before(async () => {
  if (!canRun()) return;
  try {
    const dir = mkdtempSync('/tmp/skf-'); // short: conmon's attach socket path must fit in sockaddr_un
    const rootfs = makeBusyboxRootfs({ parent: dir });
    const tag = randomBytes(4).toString('hex');
    const cgroupParent = `/skiff-flood-${tag}`;
    const pod = testPodRecord({
      metadata: { name: 'flood', uid: `uid-${tag}`, namespace: 'default', attempt: 0 },
      logDirectory: join(dir, 'logs'),
      hostname: 'flood',
      namespaces: {},
      networkMode: 'NODE',
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
    // Waits for a line on stdin (sent once attached), then writes OUTPUT bytes as fast as it can.
    const config = ContainerConfig.fromPartial({
      metadata: { name: 'flood', attempt: 0 },
      image: { image: 'busybox' },
      command: ['sh', '-c', `read go; head -c ${OUTPUT} /dev/zero; exec sleep 3600`],
      logPath: 'flood.log',
      stdin: true,
    });
    const id = await manager.create({ podSandboxId: pod.id, config, sandboxConfig: undefined });
    await manager.start(id);
    await until('container running', async () => (await manager.status(id)).state === ContainerState.CONTAINER_RUNNING);
    world = { dir, cgroupParent, pod, manager, id };
  } catch (err) {
    setupError = err as Error;
  }
});

after(async () => {
  if (!world) return;
  const w = world;
  for (const v of await w.manager.list()) await w.manager.remove(v.record.id).catch(() => {});
  await w.manager.close();
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

test('attach: a client that stops reading while the container floods its stdout does not make skiffd hold the output', { timeout: 180_000 }, async (t) => {
  if (!canRun()) return unavailable(t, 'needs root, runc, conmon, busybox and the attach add-on');
  if (setupError) throw setupError;
  const w = world!;

  // Bytes skiffd read from conmon's attach socket.
  let readFromConmon = 0;
  const emit = SeqpacketSocket.prototype.emit;
  SeqpacketSocket.prototype.emit = function (this: SeqpacketSocket, event: string | symbol, ...args: unknown[]) {
    if (event === '_data') readFromConmon += (args[0] as Buffer).length;
    return emit.call(this, event, ...args);
  };
  t.after(() => {
    SeqpacketSocket.prototype.emit = emit;
  });

  // A client that never reads: its stream never completes a write.
  const stdout = new Writable({ write() {} });
  const stdin = new PassThrough();
  const abort = new AbortController();
  t.after(() => abort.abort());
  const backend = makeStreamingBackend({
    containers: w.manager,
    pods: { get: (id: string) => (id === w.pod.id ? w.pod : undefined), list: () => [w.pod] } as never,
  });
  let done = false;
  const session = backend
    .attach(
      { kind: 'attach', containerId: w.id, tty: false, stdin: true, stdout: true, stderr: false },
      { stdin, stdout, resize: new ResizeFeed(false), signal: abort.signal },
    )
    .finally(() => (done = true));
  stdin.write('go\n');

  // Either skiffd ends the session, or it reads the whole flood while holding it (the failure).
  await until('the attach ends or skiffd read all the output', () => done || readFromConmon >= OUTPUT, 120_000);
  assert.ok(done, `the session kept going with ${stdout.writableLength} unread bytes held`);
  await session;
  // Ended because the client fell behind, not for another reason before any output flowed.
  assert.ok(readFromConmon >= MAX_UNREAD_OUTPUT, `skiffd read only ${readFromConmon} bytes before the session ended`);
  assert.ok(readFromConmon < 2 * MAX_UNREAD_OUTPUT, `skiffd read ${readFromConmon} bytes from conmon for a client that read none`);
  assert.ok(stdout.writableLength <= MAX_UNREAD_OUTPUT + 64 * 1024);
});
