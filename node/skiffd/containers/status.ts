// What a container is now: its record plus conmon's exit file, and a running container whose
// monitor died found out (it will never get an exit file).
import { ContainerState } from '../../../proto/gen/runtime/v1/api.ts';
import { nowNs } from '../util/clock.ts';
import { monitorAlive } from './process.ts';
import type { ContainerRecord } from './record.ts';
import type { ContainerStore } from './store.ts';
import { applyExit } from './teardown.ts';
import type { ContainerView } from './types.ts';

/**
 * How often a listing looks at a running container's monitor in /proc. The kubelet lists every
 * container each second; a dead monitor is rare and found at the next look (a status call of the
 * container itself always looks). Exits are not delayed by this: the exit file is read on every call.
 */
const LIST_MONITOR_CHECK_MS = 5_000;

/**
 * `listing` is set for a listing: its `exitFiles` is the exit directory's content read once for the
 * whole listing, so a container with no file there has not exited without a stat of its own (one with
 * a file is read as usual; when the directory could not be read, each container is looked at).
 */
export async function viewOf(store: ContainerStore, record: ContainerRecord, listing?: { exitFiles?: ReadonlySet<string> }): Promise<ContainerView> {
  const exitFiles = listing?.exitFiles;
  if (record.phase === 'exited') {
    return { record, state: ContainerState.CONTAINER_EXITED };
  }
  const exit = exitFiles && !exitFiles.has(record.id) ? undefined : await store.exitOf(record.id);
  if (exit) {
    const reason = exit.oomKilled ? 'OOMKilled' : exit.exitCode === 0 ? 'Completed' : 'Error';
    return {
      record: { ...record, phase: 'exited', exitCode: exit.exitCode, finishedAt: exit.finishedAt, reason },
      state: ContainerState.CONTAINER_EXITED,
      exit,
    };
  }
  if (record.phase === 'created') return { record, state: ContainerState.CONTAINER_CREATED };
  if (
    record.conmonPid &&
    !store.lostChecks.has(record.id) &&
    monitorCheckDue(store, record.id, listing !== undefined) &&
    !(await monitorAlive(record.conmonPid))
  ) {
    // No monitor means no exit file will ever come: ask the runtime (under the lock, off this call).
    store.lostChecks.add(record.id);
    void store
      .withLock(record.id, () => checkLost(store, record.id))
      .catch((err) => store.log.warn('checking a container without monitor failed', { id: record.id, err: String(err) }))
      .finally(() => store.lostChecks.delete(record.id));
  }
  return { record, state: ContainerState.CONTAINER_RUNNING };
}

async function checkLost(store: ContainerStore, id: string): Promise<void> {
  const record = store.record(id);
  if (record?.phase !== 'running') return;
  const exit = await store.exitOf(id);
  if (exit) {
    await applyExit(store, record, exit);
    return;
  }
  const state = await store
    .runtimeOf(record)
    .state(id)
    .catch(() => undefined);
  if (!state || state.status === 'stopped') {
    await applyExit(store, record, { exitCode: 255, finishedAt: String(nowNs()), oomKilled: false }, 'its monitor (conmon) died, so its exit code is unknown');
  } else if (!store.warnedUnmonitored.has(id)) {
    store.warnedUnmonitored.add(id);
    store.log.warn('container runs without its monitor (conmon died): its exit will not be recorded', { id });
  }
}

function monitorCheckDue(store: ContainerStore, id: string, listing: boolean): boolean {
  const now = Date.now();
  if (listing && now - (store.monitorCheckedAt.get(id) ?? 0) < LIST_MONITOR_CHECK_MS) return false;
  store.monitorCheckedAt.set(id, now);
  return true;
}

/** Every container's view, or those of one pod. */
export async function listViews(store: ContainerStore, podId?: string): Promise<ContainerView[]> {
  const out: ContainerView[] = [];
  // Read after the records are taken: an exit file written before this read is seen.
  const records = podId === undefined ? store.all() : store.listByPod(podId);
  const listing = { exitFiles: store.exitFiles() };
  for (const r of records) out.push(await viewOf(store, r, listing));
  return out;
}
