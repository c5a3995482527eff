// StopContainer and RemoveContainer: the stop signal, SIGKILL after the timeout, then (remove)
// everything of the container goes. Both are idempotent.
import { setTimeout as sleep } from 'node:timers/promises';
import { ContainerEventType } from '../../../proto/gen/runtime/v1/api.ts';
import { nowNs } from '../util/clock.ts';
import { deadlineExceeded, ServerError, Status } from './errors.ts';
import { catchesSignal, processStartTime, untilProgramRuns } from './process.ts';
import type { ContainerRecord } from './record.ts';
import { viewOf } from './status.ts';
import type { ContainerStore } from './store.ts';
import { applyExit, destroy } from './teardown.ts';

const KILL_WAIT_MS = 10_000;
/**
 * How often a stop looks whether the program installed a handler for a signal it dropped: often at
 * first (a program that is just starting), then less, until the stop timeout ends.
 */
const REDELIVERY_POLL_MS = 20;
const REDELIVERY_SLOW_AFTER_MS = 2_000;
const REDELIVERY_SLOW_POLL_MS = 250;

/**
 * Stop signal, then SIGKILL after timeoutSeconds. Stopping a stopped container is fine, and so is an
 * unknown id: the CRI makes StopContainer idempotent, and the kubelet retries it after a removal.
 */
export async function stopContainer(store: ContainerStore, id: string, timeoutSeconds: number): Promise<void> {
  const found = findIfKnown(store, id);
  if (!found) return;
  await store.withLock(found.id, () => stopLocked(store, found.id, timeoutSeconds));
}

/** Kills a live container and deletes everything of it. Unknown ids are fine (idempotent). */
export async function removeContainer(store: ContainerStore, id: string): Promise<void> {
  const record = findIfKnown(store, id);
  if (!record) return;
  await store.withLock(record.id, async () => {
    const current = store.record(record.id);
    if (!current) return;
    await stopLocked(store, record.id, 0);
    await destroy(store, record.id, store.record(record.id) ?? current);
    store.emit(current, ContainerEventType.CONTAINER_DELETED_EVENT);
  });
}

/** The container an id (or unique prefix) names, or undefined when none does; an empty id stays an error. */
function findIfKnown(store: ContainerStore, id: string): ContainerRecord | undefined {
  try {
    return store.find(id);
  } catch (err) {
    if (err instanceof ServerError && err.code === Status.NOT_FOUND) return undefined;
    throw err;
  }
}

async function stopLocked(store: ContainerStore, id: string, timeoutSeconds: number): Promise<void> {
  const record = store.record(id);
  // Never started: nothing runs (the runtime does not know it yet); it stays CREATED, as in containerd.
  if (!record || record.phase === 'exited' || record.phase === 'creating' || record.phase === 'created') return;
  const view = await viewOf(store, record);
  if (view.exit) {
    await applyExit(store, record, view.exit);
    return;
  }
  if (timeoutSeconds > 0) {
    // One deadline for the whole grace period: waiting for the program to start counts in it.
    const deadline = Date.now() + timeoutSeconds * 1000;
    const redelivery = await sendStopSignal(store, record, deadline);
    const exited = await store.exits.waitFor(id, Math.max(0, deadline - Date.now()));
    redelivery.cancel();
    if (exited) return finishStop(store, record);
  }
  if (record.killAll) await store.runtimeOf(record).kill(id, 9, true);
  else await signalInit(store, record, 9);
  if (await store.exits.waitFor(id, KILL_WAIT_MS)) return finishStop(store, record);
  // The runtime may have lost it (state says stopped) without conmon telling us.
  const state = await store
    .runtimeOf(record)
    .state(id)
    .catch(() => undefined);
  if (!state || state.status === 'stopped') {
    await applyExit(store, record, { exitCode: 137, finishedAt: String(nowNs()), oomKilled: false }, 'stopped, but its monitor did not report an exit code');
    return;
  }
  throw deadlineExceeded(`container ${id} did not exit ${KILL_WAIT_MS / 1000}s after SIGKILL`);
}

/**
 * Sends the stop signal so the container's program gets it. A stop right after a start would
 * otherwise race the program's own start-up: before execve the runtime's init takes the signal,
 * and before the program installs its handler a namespace init drops it. So the signal waits for
 * the execve, and is sent once more if the program installs a handler before the deadline (the
 * stop timeout): on a loaded node a program can take seconds to get there.
 */
async function sendStopSignal(store: ContainerStore, record: ContainerRecord, deadline: number): Promise<{ cancel(): void }> {
  const signal = record.stopSignal;
  const pid = record.pid;
  if (!pid || !record.pidStartTime || (await processStartTime(pid)) !== record.pidStartTime) {
    await signalInit(store, record, signal);
    return { cancel() {} };
  }
  await untilProgramRuns(pid, store.runtimeOf(record).name, Math.max(0, deadline - Date.now()));
  const caught = await catchesSignal(pid, signal);
  await signalInit(store, record, signal);
  if (caught) return { cancel() {} };
  let cancelled = false;
  const slowAfter = Date.now() + REDELIVERY_SLOW_AFTER_MS;
  void (async () => {
    while (!cancelled && Date.now() < deadline) {
      await sleep(Date.now() < slowAfter ? REDELIVERY_POLL_MS : REDELIVERY_SLOW_POLL_MS);
      if (cancelled || (await processStartTime(pid)) !== record.pidStartTime) return;
      if (await catchesSignal(pid, signal)) {
        if (!cancelled) await signalInit(store, record, signal);
        return;
      }
    }
  })().catch((err) => store.log.warn('re-sending the stop signal failed', { id: record.id, err: String(err) }));
  return {
    cancel() {
      cancelled = true;
    },
  };
}

/**
 * Signals the container's init directly when it is provably the same process (pid and start time
 * as recorded at start, the check `runc kill` makes too), saving a runtime exec; else asks the runtime.
 */
async function signalInit(store: ContainerStore, record: ContainerRecord, signal: number): Promise<void> {
  if (record.pid && record.pidStartTime) {
    const now = await processStartTime(record.pid);
    if (now !== record.pidStartTime) return; // already gone
    try {
      process.kill(record.pid, signal);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ESRCH') return;
    }
  }
  await store.runtimeOf(record).kill(record.id, signal, false);
}

async function finishStop(store: ContainerStore, record: ContainerRecord): Promise<void> {
  const exit = await store.exitOf(record.id);
  if (exit) await applyExit(store, store.record(record.id) ?? record, exit);
}
