// ExecSync (a command in a running container, output captured) and ReopenContainerLog (conmon
// reopens the log after the kubelet rotated it).
import { constants as fsConstants } from 'node:fs';
import { access, open } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ContainerState } from '../../../proto/gen/runtime/v1/api.ts';
import { deadlineExceeded, failedPrecondition, internal, invalidArgument } from './errors.ts';
import { execProcess } from '../oci/exec-process.ts';
import { viewOf } from './status.ts';
import type { ContainerStore } from './store.ts';

const MAX_EXEC_OUTPUT = 16 * 1024 * 1024;
const REOPEN_WAIT_MS = 2_000;

export async function execSync(
  store: ContainerStore,
  id: string,
  cmd: string[],
  timeoutSeconds: number,
): Promise<{ stdout: Buffer; stderr: Buffer; exitCode: number }> {
  const record = store.find(id);
  if (cmd.length === 0) throw invalidArgument('cmd', 'empty');
  const view = await viewOf(store, record);
  if (view.state !== ContainerState.CONTAINER_RUNNING) throw failedPrecondition(`container ${record.id} is not running (${ContainerState[view.state]})`);
  const spec = await store.runtimeSpec(record.id);
  if (!spec?.process) throw internal(`container ${record.id} has no readable config.json in its bundle: cannot run a command in it`);
  const result = await store.runtimeOf(record).execSync(record.id, {
    process: execProcess(spec.process, cmd, false),
    timeoutMs: timeoutSeconds > 0 ? timeoutSeconds * 1000 : 0,
    maxOutputBytes: MAX_EXEC_OUTPUT,
    cgroupPath: record.cgroupsPath,
  });
  if (result.timedOut) throw deadlineExceeded(`command ${JSON.stringify(cmd)} in container ${record.id} timed out after ${timeoutSeconds}s`);
  return { stdout: result.stdout, stderr: result.stderr, exitCode: result.exitCode };
}

/** Asks conmon to reopen the log file (after the kubelet rotated it). */
export async function reopenLog(store: ContainerStore, id: string): Promise<void> {
  const record = store.find(id);
  const view = await viewOf(store, record);
  if (view.state !== ContainerState.CONTAINER_RUNNING) throw failedPrecondition(`container ${record.id} is not running: no log to reopen`);
  let handle;
  try {
    // Non-blocking: a blocking open of a FIFO with no reader would hang forever.
    handle = await open(join(store.bundle(record.id), 'ctl'), fsConstants.O_WRONLY | fsConstants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENXIO' || code === 'ENOENT') throw failedPrecondition(`the monitor (conmon) of container ${record.id} is not running; cannot reopen its log`);
    throw err;
  }
  // Rotation renames the file away before the call; reopening a file still in place changes nothing visible.
  const rotated = !(await exists(record.conmonLogPath));
  try {
    await handle.write('2 0 0\n');
  } finally {
    await handle.close();
  }
  if (!rotated) return;
  // conmon reopens on its own time; the call answers once the new file is there, as the
  // kubelet's log rotation expects.
  const deadline = Date.now() + REOPEN_WAIT_MS;
  while (!(await exists(record.conmonLogPath))) {
    if (Date.now() >= deadline)
      throw internal(`the monitor (conmon) of container ${record.id} did not reopen ${record.conmonLogPath} within ${REOPEN_WAIT_MS / 1000}s`);
    await sleep(2);
  }
}

function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
