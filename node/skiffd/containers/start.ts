// StartContainer: conmon creates the container in the runtime (unless a crash left it created
// already), the record says "running", then `runc start`. A failed start is reported as exited.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ContainerEventType, ContainerState } from '../../../proto/gen/runtime/v1/api.ts';
import { nowNs } from '../util/clock.ts';
import { failedPrecondition, internal } from './errors.ts';
import { processStartTime } from './process.ts';
import type { ContainerRecord } from './record.ts';
import { viewOf } from './status.ts';
import type { ContainerStore } from './store.ts';
import { applyExit, ensureMounted } from './teardown.ts';
import { attachIdmappedMounts, detachIdmappedMounts } from './idmap-mounts.ts';

export async function startContainer(store: ContainerStore, id: string): Promise<void> {
  const found = store.find(id);
  await store.withLock(found.id, async () => {
    const record = store.find(found.id);
    const view = await viewOf(store, record);
    if (view.state !== ContainerState.CONTAINER_CREATED) {
      throw failedPrecondition(`container ${record.id} is ${ContainerState[view.state]}, not CONTAINER_CREATED`);
    }
    let running: ContainerRecord = record;
    try {
      await ensureMounted(store, record);
      if (!store.runtimeCreated.has(record.id)) {
        // A stale exit file would make the new run look finished.
        await rm(join(store.exitDir, record.id), { force: true });
        const idmapped = record.idmappedMounts ?? [];
        if (idmapped.length > 0) await attachIdmappedMounts(idmapped, record.userNamespacePath ?? '');
        const creating = store.runtimeOf(record).create({
          id: record.id,
          bundle: store.bundle(record.id),
          logPath: record.conmonLogPath,
          exitDir: store.exitDir,
          persistDir: store.persistDir(record.id),
          socketDir: store.socketDir,
          tty: record.tty,
          stdin: record.stdin,
          stdinOnce: record.stdinOnce,
        });
        // The container's mount namespace has its own copies now; the host's are let go either way.
        const created = await creating.finally(() => (idmapped.length > 0 ? detachIdmappedMounts(idmapped.map((m) => m.target)) : undefined));
        running = { ...record, pid: created.pid, conmonPid: created.conmonPid };
        // The runtime's own remarks belong in the daemon's log, never in the container's.
        for (const message of created.runtimeWarnings ?? []) store.log.info('OCI runtime warning', { id: record.id, runtime: record.runtime, message });
        store.runtimeCreated.add(record.id);
      } else {
        const state = await store.runtimeOf(record).state(record.id);
        running = { ...record, pid: state?.pid || record.pid };
      }
      // Node plugins see it created, with its pid, before it starts (and may refuse the start).
      await store.options.plugins?.()?.startContainer(running);
      // Recorded before `runc start`: after a crash, `runc state` tells whether the start happened.
      running = { ...running, phase: 'running', startedAt: String(nowNs()), pidStartTime: running.pid ? await processStartTime(running.pid) : undefined };
      await store.save(running);
      await store.runtimeOf(record).start(record.id);
      store.runtimeCreated.delete(record.id);
    } catch (err) {
      // Report it as exited with the runtime's message; the kubelet removes it and tries anew.
      await store
        .runtimeOf(record)
        .delete(record.id, true)
        .catch(() => {});
      store.runtimeCreated.delete(record.id);
      const exit = (await store.exits.waitFor(record.id, running.conmonPid ? 2000 : 0)) ? await store.exitOf(record.id) : undefined;
      const failed: ContainerRecord = {
        ...running,
        phase: 'exited',
        exitCode: exit?.exitCode ?? 128,
        startedAt: running.startedAt ?? String(nowNs()),
        finishedAt: exit?.finishedAt ?? String(nowNs()),
        reason: 'StartError',
        message: (err as Error).message,
      };
      await store.save(failed);
      store.emit(failed, ContainerEventType.CONTAINER_STOPPED_EVENT);
      await applyExit(store, failed, { exitCode: failed.exitCode!, finishedAt: failed.finishedAt!, oomKilled: false });
      throw internal(`starting container ${record.id}: ${(err as Error).message}`);
    }
    store.emit(running, ContainerEventType.CONTAINER_STARTED_EVENT);
  });
}
