// How conmon is started: through a helper shell, with a FIFO as its sync pipe, so that a create never
// forks the daemon; and a conmon that cannot start says why at once instead of running into the
// create's deadline.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContainerConfig, ContainerState } from '../../proto/gen/runtime/v1/api.ts';
import { createWithConmon } from '../../node/skiffd/oci/conmon.ts';
import { OciRuntimeError } from '../../node/skiffd/oci/runtime.ts';
import { runThroughHelper } from '../../node/skiffd/util/helper-shell.ts';
import { needs } from '../support/prereq.ts';
import { startRuncContainers } from '../support/runc-containers.ts';
import { until } from '../support/wait.ts';

test("conmon is started by a helper shell: its sync pipe is the daemon's FIFO, whose name is gone once read", { timeout: 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const { manager: m, pod } = await startRuncContainers(t);
  const id = await m.create({
    podSandboxId: pod.id,
    config: ContainerConfig.fromPartial({ metadata: { name: 'sleeper', attempt: 0 }, image: { image: 'busybox' }, command: ['sleep', '60'] }),
    sandboxConfig: undefined,
  });
  await m.start(id);
  const record = m.get(id)!;
  assert.ok(record.conmonPid, 'the monitor pid is known');
  // A spawn from the daemon hands conmon a socket pair ("socket:[N]"); a helper, the FIFO in the bundle.
  const syncPipe = readlinkSync(`/proc/${record.conmonPid}/fd/3`);
  assert.match(syncPipe, /\/\.conmon-sync-[0-9a-f]{12} \(deleted\)$/, `conmon's fd 3 is ${syncPipe}`);
  const bundle = m.paths(id).bundle;
  assert.deepEqual(
    readdirSync(bundle).filter((n) => n.startsWith('.conmon-sync-')),
    [],
    'no FIFO is left in the bundle',
  );
  assert.equal((await m.status(id)).state, ContainerState.CONTAINER_RUNNING);
  await m.stop(id, 5);
  await until('the container to exit', async () => (await m.status(id)).state === ContainerState.CONTAINER_EXITED, 20_000);
});

/** A bundle directory conmon can be pointed at; nothing in it needs to run. */
function launchDirs(t: { after: (fn: () => void) => void }) {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-conmon-launch-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const bundle = join(dir, 'bundle');
  for (const d of [bundle, join(dir, 'exits'), join(dir, 'persist'), join(dir, 'sockets')]) mkdirSync(d, { recursive: true });
  return {
    id: 'a'.repeat(64),
    bundle,
    logPath: join(dir, 'ctr.log'),
    exitDir: join(dir, 'exits'),
    persistDir: join(dir, 'persist'),
    socketDir: join(dir, 'sockets'),
    timeoutMs: 20_000,
  };
}

test('a conmon that refuses its flags fails the create at once, with what conmon said', { timeout: 60_000 }, async (t) => {
  if (!needs(t, { commands: ['conmon', 'runc'] })) return;
  const o = launchDirs(t);
  const started = Date.now();
  const err = await createWithConmon(
    { conmonPath: 'conmon', runtimePath: 'runc', runtimeRoot: join(o.bundle, 'runc'), conmonFlags: ['--no-such-flag'] },
    o,
  ).then(
    () => assert.fail('the create succeeded'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof OciRuntimeError, String(err));
  assert.match(err.message, /no-such-flag/, err.message);
  assert.doesNotMatch(err.message, /did not report/, 'a failure, not the deadline');
  assert.ok(Date.now() - started < o.timeoutMs, 'answered before the deadline');
  assert.deepEqual(
    readdirSync(o.bundle).filter((n) => n.startsWith('.conmon-sync-')),
    [],
    'no FIFO is left in the bundle',
  );
});

test('a conmon that is not there fails the create at once, naming it', { timeout: 60_000 }, async (t) => {
  if (!needs(t, { commands: ['runc'] })) return;
  const o = launchDirs(t);
  const missing = join(o.bundle, 'no-conmon-here');
  const err = await createWithConmon({ conmonPath: missing, runtimePath: 'runc', runtimeRoot: join(o.bundle, 'runc') }, o).then(
    () => assert.fail('the create succeeded'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof OciRuntimeError, String(err));
  assert.ok(err.message.includes(missing), err.message);
  assert.doesNotMatch(err.message, /did not report/, 'a failure, not the deadline');
});

test('with every helper shell busy, conmon is spawned from the daemon and the container runs alike', { timeout: 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const { manager: m, pod } = await startRuncContainers(t);
  // Hold every helper shell the daemon may have for as long as the create takes.
  const held: Promise<unknown>[] = [];
  for (;;) {
    const busy = runThroughHelper('sleep', ['8'], 30_000);
    if (!busy) break;
    held.push(busy);
  }
  t.after(() => Promise.all(held));
  assert.ok(held.length > 0, 'the helper shells were taken');
  const id = await m.create({
    podSandboxId: pod.id,
    config: ContainerConfig.fromPartial({ metadata: { name: 'spawned', attempt: 0 }, image: { image: 'busybox' }, command: ['sleep', '60'] }),
    sandboxConfig: undefined,
  });
  await m.start(id);
  const record = m.get(id)!;
  assert.match(readlinkSync(`/proc/${record.conmonPid}/fd/3`), /^(pipe|socket):\[\d+\]$/, 'an anonymous pipe (a socket pair) from the spawn');
  assert.equal((await m.status(id)).state, ContainerState.CONTAINER_RUNNING);
  await m.stop(id, 5);
  await until('the container to exit', async () => (await m.status(id)).state === ContainerState.CONTAINER_EXITED, 20_000);
});
