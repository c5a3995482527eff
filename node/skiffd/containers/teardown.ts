// What a container lets go of when it ends (runtime state, rootfs mount) and when it is removed
// (everything else); and the rootfs mount a live container keeps. Shared by every operation that
// can see a container end: stop, status, recovery, a failed create or start.
import { randomBytes } from 'node:crypto';
import { rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ContainerEventType } from '../../../proto/gen/runtime/v1/api.ts';
import type { ExitInfo } from './exits.ts';
import { killIfConmon } from './process.ts';
import type { ContainerRecord } from './record.ts';
import { mountRootfs, rootfsDirs, unmountRootfs } from './rootfs.ts';
import { mountImageVolume, unmountImageVolumes } from './image-volumes.ts';
import { idmapDir } from './idmap-mounts.ts';
import { mountIdmappedRootfs } from './idmap-rootfs.ts';
import type { ContainerStore } from './store.ts';
import { removeTree, unmountTree } from '../util/remove-tree.ts';

/** Keeps the rootfs mounted for a live container (a no-op unless something unmounted it). */
export async function ensureMounted(store: ContainerStore, record: ContainerRecord): Promise<void> {
  if (store.mounted.has(record.id)) return;
  const dirs = rootfsDirs(store.dir(record.id));
  if (record.userNamespace && record.userNamespacePath) {
    await mountIdmappedRootfs(dirs, record.lowerDirs, idmapDir(store.idmapDir, record.id), record.userNamespacePath, record.userNamespace);
  } else await mountRootfs(dirs, record.lowerDirs);
  const userns = record.userNamespacePath ? { path: record.userNamespacePath, stagingDir: idmapDir(store.idmapDir, record.id) } : undefined;
  for (const v of record.imageVolumes ?? []) await mountImageVolume(store.dir(record.id), v, userns);
  store.mounted.add(record.id);
}

/**
 * Records how a container ended and lets go of what only a live container needs (runtime state,
 * rootfs mount), in one atomic record write. Idempotent: a crash half-way is finished on recovery.
 */
export async function applyExit(store: ContainerStore, record: ContainerRecord, exit: ExitInfo, message?: string): Promise<ContainerRecord> {
  if (record.phase === 'exited' && record.released) return record;
  await store
    .runtimeOf(record)
    .delete(record.id, true)
    .catch((err) => store.log.warn('runtime delete failed', { id: record.id, err: String(err) }));
  store.runtimeCreated.delete(record.id);
  await unmountRootfs(rootfsDirs(store.dir(record.id)));
  await unmountImageVolumes(store.dir(record.id), record.imageVolumes ?? []);
  store.mounted.delete(record.id);
  const already = record.phase === 'exited';
  const reason = exit.oomKilled ? 'OOMKilled' : exit.exitCode === 0 ? 'Completed' : 'Error';
  const next: ContainerRecord = already
    ? { ...record, released: true }
    : { ...record, phase: 'exited', exitCode: exit.exitCode, finishedAt: exit.finishedAt, reason, message: message ?? record.message, released: true };
  await store.save(next);
  if (!already) store.emit(next, ContainerEventType.CONTAINER_STOPPED_EVENT);
  return next;
}

/** conmon wrote an exit file: record the exit (under the container's lock). */
export async function observeExit(store: ContainerStore, id: string): Promise<void> {
  if (!store.has(id)) return;
  await store
    .withLock(id, async () => {
      const record = store.record(id);
      if (!record || record.phase === 'exited' || record.phase === 'creating') return;
      const exit = await store.exitOf(id);
      if (exit) await applyExit(store, record, exit);
    })
    .catch((err) => store.log.warn('recording a container exit failed', { id, err: String(err) }));
}

/** Removes everything a container left: runtime state, monitor, mount, directories. */
export async function destroy(store: ContainerStore, id: string, record: ContainerRecord | undefined): Promise<void> {
  if (!record?.released) {
    const runtimeKnowsIt = record?.phase !== 'created' || store.runtimeCreated.has(id);
    // Without a record, which handler made it is unknown: each is asked (deleting an unknown id is no error).
    const runtimes = record ? [store.runtimeOf(record)] : store.runtimes.all().map((h) => h.runtime);
    if (runtimeKnowsIt) {
      for (const runtime of runtimes) await runtime.delete(id, true).catch((err) => store.log.warn('runtime delete failed', { id, err: String(err) }));
    }
    if (record?.conmonPid) killIfConmon(record.conmonPid);
    await unmountRootfs(rootfsDirs(store.dir(id)));
    await unmountImageVolumes(store.dir(id), record?.imageVolumes ?? []);
  }
  // Whatever is still mounted in its directory, by the mount table and not the record: a create cut
  // short by a crash has mounts its record never listed. Nothing below is deleted while one stays.
  await unmountTree(store.dir(id));
  store.mounted.delete(id);
  store.runtimeCreated.delete(id);
  store.oomKills.forget(id);
  // One rename takes the container out of the store (recovery never sees it again); deleting
  // its files, which can be many in the writable layer, happens off the call.
  const trash = join(store.trashDir, `${id}-${randomBytes(4).toString('hex')}`);
  await rename(store.dir(id), trash).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
  void Promise.all([removeTree(trash), rm(join(store.exitDir, id), { force: true }), rm(join(store.socketDir, id), { force: true, recursive: true })]).catch(
    (err) => store.log.warn("deleting a removed container's files failed", { id, err: String(err) }),
  );
  store.forget(id, record);
}
