// Where an exec's runtime files live and which pid its teardown signals, against real containers (runc
// + conmon). The files (process file with the container's environment, pid file, runc's log) belong
// in the runtime's root-only directory, 0600, gone after the exec and swept at start-up; in a shared
// temp dir anybody could plant the pid a teardown kills. And a pid that is not a process of the
// container is never signalled, wherever it came from.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { PassThrough } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { ContainerConfig, ContainerState } from '../../proto/gen/runtime/v1/api.ts';
import { execInContainer } from '../../node/skiffd/streaming/backends/exec.ts';
import { execTarget } from '../../node/skiffd/streaming/backends/targets.ts';
import { ResizeFeed } from '../../node/skiffd/streaming/remotecommand.ts';
import { execPidSignallable, pidInCgroup, plausibleExecPid } from '../../node/skiffd/oci/exec-pid.ts';
import { needs, which } from '../support/prereq.ts';
import { startRuncContainers, type RuncContainers } from '../support/runc-containers.ts';
import { runCommand } from '../support/commands.ts';
import { until } from '../support/wait.ts';

type Ctx = import('node:test').TestContext;

async function sleeper(t: Ctx): Promise<{ c: RuncContainers; id: string; execDir: string } | undefined> {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return undefined;
  const c = await startRuncContainers(t);
  const id = await c.manager.create({
    podSandboxId: c.pod.id,
    config: ContainerConfig.fromPartial({ metadata: { name: 'sleeper', attempt: 0 }, image: { image: 'busybox' }, command: ['sleep', '3600'] }),
    sandboxConfig: undefined,
  });
  await c.manager.start(id);
  await until('the container to run', async () => (await c.manager.status(id)).state === ContainerState.CONTAINER_RUNNING);
  return { c, id, execDir: `${join(c.state, 'runc')}-exec` };
}

/** A process on the host, outside every container, in its own process group; killed when the test ends. */
function hostSleep(t: Ctx): number {
  const child = spawn('sleep', ['600'], { detached: true, stdio: 'ignore' });
  child.unref();
  t.after(() => {
    try {
      process.kill(child.pid!, 'SIGKILL');
    } catch {
      /* gone */
    }
  });
  return child.pid!;
}

function alive(pid: number): boolean {
  try {
    // A zombie still answers kill(pid, 0): look at its state too.
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

const mode = (file: string) => statSync(file).mode & 0o777;

test('exec pid guard: pid 0, 1 and no number are refused; a host process is not in the container, the container init is', { timeout: 60_000 }, async (t) => {
  for (const pid of [undefined, Number.NaN, -1, 0, 1, 1.5]) assert.equal(plausibleExecPid(pid), false, String(pid));
  assert.equal(plausibleExecPid(2), true);
  const s = await sleeper(t);
  if (!s) return;
  const { record } = await s.c.manager.status(s.id);
  assert.ok(record.cgroupsPath && record.pid, 'the record names its cgroup and init');
  const host = hostSleep(t);
  assert.equal(await pidInCgroup(host, record.cgroupsPath), false, 'a host process is not in the container');
  assert.equal(await execPidSignallable(host, record.cgroupsPath), false);
  assert.equal(await execPidSignallable(1, record.cgroupsPath), false);
  assert.equal(await pidInCgroup(record.pid!, ''), false, 'no cgroup known: nothing passes');
  assert.equal(await execPidSignallable(record.pid, record.cgroupsPath), true, "the container's own process may be signalled");
});

test("exec files: ExecSync's process file is 0600 in the runtime's directory and gone after; a restart sweeps the directory and makes it 0700", {
  timeout: 90_000,
}, async (t) => {
  const s = await sleeper(t);
  if (!s) return;
  // A directory left 0755 holding a crashed daemon's process file: the next start fixes and empties it.
  chmodSync(s.execDir, 0o755);
  writeFileSync(join(s.execDir, '4242-f1.process.json'), '{"env":["TOKEN=secret"]}');
  const manager = await s.c.reopen();
  assert.deepEqual(readdirSync(s.execDir), [], 'swept at start-up, before any exec');
  assert.equal(mode(s.execDir), 0o700);

  const exec = manager.execSync(s.id, ['sleep', '3'], 60);
  let processFile = '';
  await until('the process file to appear', () => {
    processFile = readdirSync(s.execDir).find((n) => n.endsWith('.process.json')) ?? '';
    return processFile !== '';
  });
  assert.equal(mode(join(s.execDir, processFile)), 0o600);
  assert.equal((await exec).exitCode, 0);
  await until('the exec files to go', () => readdirSync(s.execDir).length === 0);
});

/**
 * A runtime that records its arguments and runs runc. With `plant` it first writes that pid into the
 * pid file, as someone who could write there would, and hands runc another path for its own.
 */
function recordingRuntime(dir: string, plant?: number): { path: string; log: string; args: () => string[] } {
  const log = join(dir, `args-${randomBytes(4).toString('hex')}`);
  const path = `${log}.sh`;
  // No argument has a space: the command travels in the process file.
  const swap = plant
    ? `set -- $(prev=; for a in "$@"; do if [ "$prev" = --pid-file ]; then echo ${plant} > "$a"; echo "$a.real"; else echo "$a"; fi; prev=$a; done)\n`
    : '';
  writeFileSync(path, `#!/bin/sh\nprintf '%s\\n' "$@" > ${log}\n${swap}exec ${which('runc')} "$@"\n`, { mode: 0o755 });
  return { path, log, args: () => readFileSync(log, 'utf8').trim().split('\n') };
}

const fileArgs = (args: string[]) => ['--pid-file', '--process', '--log'].map((flag) => args[args.indexOf(flag) + 1]);

test('exec files: a streaming exec keeps its files in the runtime directory, 0600, none in the shared temp dir, all gone after', {
  timeout: 90_000,
}, async (t) => {
  const s = await sleeper(t);
  if (!s) return;
  const runtime = recordingRuntime(dirname(s.c.state));
  const target = { ...(await execTarget(s.c.manager, s.id)), runtimePath: runtime.path };
  const abort = new AbortController();
  const session = execInContainer(
    target,
    { kind: 'exec', containerId: s.id, cmd: ['sleep', '600'], tty: false, stdin: false, stdout: true, stderr: false },
    { stdout: new PassThrough().resume(), resize: new ResizeFeed(false), signal: abort.signal },
  ).catch(() => -1);
  await until('the runtime to start', () => existsSync(runtime.log));
  const files = fileArgs(runtime.args());
  for (const file of files) {
    assert.equal(dirname(file), s.execDir, `${file} is in the runtime's directory`);
    assert.ok(!file.startsWith(`${tmpdir()}/skiffd-exec-`));
  }
  await until('runc to write the pid file', () => existsSync(files[0]));
  const [, processFile, logFile] = files;
  assert.equal(mode(processFile), 0o600, 'the process file (the container environment) is root-only');
  assert.equal(mode(logFile), 0o600, 'the log is made by skiffd, root-only, before runc appends to it');
  abort.abort();
  await session;
  await until('the exec files to go', () => readdirSync(s.execDir).length === 0);
});

test('exec files: a pid file naming a process outside the container is not signalled when the client leaves', { timeout: 90_000 }, async (t) => {
  const s = await sleeper(t);
  if (!s) return;
  const victim = hostSleep(t);
  const runtime = recordingRuntime(dirname(s.c.state), victim);
  const target = { ...(await execTarget(s.c.manager, s.id)), runtimePath: runtime.path };
  const marker = `sleep ${5000 + (randomBytes(2).readUInt16LE(0) % 1000)}`;
  const running = () => runCommand('runc', ['--root', join(s.c.state, 'runc'), 'exec', s.id, 'ps', '-o', 'args']).then((r) => r.stdout.includes(marker));
  const abort = new AbortController();
  const session = execInContainer(
    target,
    { kind: 'exec', containerId: s.id, cmd: marker.split(' '), tty: false, stdin: false, stdout: true, stderr: false },
    { stdout: new PassThrough().resume(), resize: new ResizeFeed(false), signal: abort.signal },
  ).catch(() => -1);
  await until('the command to start', running);
  abort.abort();
  await session;
  // The teardown ran (runc is gone); a kill of the planted pid would have been synchronous with it.
  await new Promise((r) => setTimeout(r, 200));
  assert.ok(alive(victim), 'the host process named by the planted pid file is still running');
});
