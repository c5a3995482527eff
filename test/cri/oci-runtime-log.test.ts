// The OCI runtime's own messages are the daemon's, never the container's: what runc warns about while
// it creates a container goes to skiffd's log, and the container's log holds only what the container
// wrote. A create that fails still reports the runtime's reason.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ContainerConfig, ContainerState } from '../../proto/gen/runtime/v1/api.ts';
import { needs } from '../support/prereq.ts';
import { startRuncContainers } from '../support/runc-containers.ts';
import { until } from '../support/wait.ts';

/** The text of each CRI log line (`TIME STREAM TAG TEXT`), with its stream. */
function logLines(path: string): { stream: string; text: string }[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [, stream, , ...text] = line.split(' ');
      return { stream, text: text.join(' ') };
    });
}

test("runtime log: runc's warnings reach the daemon's log, not the container's", { timeout: 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const daemonLog: { msg: string; fields?: Record<string, unknown> }[] = [];
  const record = (msg: string, fields?: Record<string, unknown>) => void daemonLog.push({ msg, fields });
  const { manager: m, pod, state } = await startRuncContainers(t, { log: { info: record, warn: record } });
  const id = await m.create({
    podSandboxId: pod.id,
    config: ContainerConfig.fromPartial({
      metadata: { name: 'speaks', attempt: 0 },
      image: { image: 'busybox' },
      command: ['sh', '-c', 'echo out-line; echo err-line >&2'],
      logPath: 'speaks/0.log',
    }),
    sandboxConfig: undefined,
  });
  // A kernel memory limit makes runc warn as it creates the container (it ignores such limits), as the
  // systemd driver makes it warn about devices a node lacks.
  const specPath = join(dirname(state), 'root', 'containers', id, 'bundle', 'config.json');
  const spec = JSON.parse(readFileSync(specPath, 'utf8'));
  spec.linux.resources = { ...spec.linux.resources, memory: { ...spec.linux.resources?.memory, kernel: 64 * 1024 * 1024 } };
  writeFileSync(specPath, JSON.stringify(spec));

  await m.start(id);
  await until('the container to exit', async () => (await m.status(id)).state === ContainerState.CONTAINER_EXITED, 20_000);
  const lines = logLines(m.get(id)!.conmonLogPath);
  assert.deepEqual(
    lines.map((l) => `${l.stream} ${l.text}`).sort(),
    ['stderr err-line', 'stdout out-line'],
    "the container's log holds what it wrote and nothing of the runtime's",
  );
  const warned = daemonLog.find((e) => e.msg === 'OCI runtime warning');
  assert.ok(warned, `the runtime's warning is in the daemon's log: ${JSON.stringify(daemonLog)}`);
  assert.match(String(warned.fields?.message), /kernel memory/i);
  assert.equal(warned.fields?.id, id);
});

test("runtime log: a create that fails reports the runtime's reason", { timeout: 60_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon'] })) return;
  const { manager: m, pod } = await startRuncContainers(t);
  const id = await m.create({
    podSandboxId: pod.id,
    config: ContainerConfig.fromPartial({
      metadata: { name: 'missing', attempt: 0 },
      image: { image: 'busybox' },
      command: ['/no/such/program'],
      logPath: 'missing/0.log',
    }),
    sandboxConfig: undefined,
  });
  await assert.rejects(m.start(id), (err: Error) => {
    assert.match(err.message, /\/no\/such\/program/, 'the message names the program');
    assert.match(err.message, /no such file|not found/i);
    return true;
  });
});
