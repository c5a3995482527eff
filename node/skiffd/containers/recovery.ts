// Restart recovery: every record on disk is reconciled with the runtime and conmon's exit files
// before the daemon serves a call, and files of containers removed before a crash are swept.
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { openAppArmor } from '../confinement/apparmor/index.ts';
import { nowNs } from '../util/clock.ts';
import { readHostFacts } from './host.ts';
import { CONTAINER_ID, type ContainerStore } from './store.ts';
import { applyExit, destroy, ensureMounted, observeExit } from './teardown.ts';
import { sweepIdmappedMounts } from './idmap-mounts.ts';
import { sweepDir } from '../util/remove-tree.ts';

/** Loads every record, reconciles it with the runtime and conmon's exit files, starts watching exits. */
export async function recoverContainers(store: ContainerStore): Promise<void> {
  store.host = { ...readHostFacts(store.options.defaultCgroupParent ?? '/skiffd', store.options.cgroups), ...store.options.host };
  // Never a default profile the kernel may not hold (a developer's Ubuntu machine has AppArmor on, and
  // only a skiffd that loaded its profile can name it).
  store.apparmor ??= await openAppArmor(store.options.state, store.log);
  if (!store.host.hugetlb) store.log.debug?.('no hugetlb cgroup controller on this host: hugepage limits are left out of container specs');
  await mkdir(store.containersDir, { recursive: true, mode: 0o711 });
  await mkdir(store.socketDir, { recursive: true });
  await sweepIdmappedMounts(store.idmapDir);
  if (!store.oomKills.open()) store.log.warn('cannot read the kernel log (/dev/kmsg): an OOM kill is reported only when conmon saw it');
  // Watch first, so an exit during recovery is not missed.
  await store.exits.start();
  store.exits.on('exit', (id: string) => void observeExit(store, id));
  // A few at a time: each may run `runc state`, `runc delete` or a mount.
  const ids = (await readdir(store.containersDir)).filter((name) => CONTAINER_ID.test(name));
  const workers = Array.from({ length: Math.min(8, ids.length) }, async () => {
    for (let id = ids.shift(); id !== undefined; id = ids.shift()) {
      const current = id;
      await store
        .withLock(current, () => recover(store, current))
        .catch((err) => store.log.warn('container recovery failed', { id: current, err: String(err) }));
    }
  });
  await Promise.all(workers);
  // Files of containers removed before a crash: the trash, and exit files and sockets nobody owns. What
  // will not go is left with a warning rather than failing every start.
  const warn = (msg: string, fields: Record<string, unknown>) => store.log.warn(msg, fields);
  await sweepDir(store.trashDir, warn, 0o700);
  for (const dir of [store.exitDir, store.socketDir]) {
    for (const name of await readdir(dir).catch(() => [] as string[])) {
      if (!CONTAINER_ID.test(name) || store.has(name)) continue;
      const path = join(dir, name);
      await rm(path, { recursive: true, force: true }).catch((err) => warn('cannot delete leftovers; leaving them', { path, err: String(err) }));
    }
  }
}

async function recover(store: ContainerStore, id: string): Promise<void> {
  const record = await store.readRecord(id);
  if (!record || record.phase === 'creating') {
    // A create that never returned: the client never learned the id, so undo it.
    store.log.warn('cleaning up a half-created container', { id });
    await destroy(store, id, record);
    return;
  }
  store.load(record);
  store.retainImage(id, [...record.lowerDirs, ...(record.imageVolumes ?? []).flatMap((v) => v.layers)]);
  if (record.phase === 'exited') {
    // The exit was recorded, but the crash may have come before the runtime state and mount went.
    if (!record.released)
      await applyExit(store, record, { exitCode: record.exitCode ?? 0, finishedAt: record.finishedAt ?? String(nowNs()), oomKilled: false });
    return;
  }
  const exit = await store.exitOf(id);
  if (exit) {
    await applyExit(store, record, exit);
    return;
  }
  const state = await store
    .runtimeOf(record)
    .state(id)
    .catch(() => undefined);
  if (record.phase === 'created') {
    // A StartContainer that crashed after conmon created the container: adopt it, start skips the create.
    if (state?.status === 'created') store.runtimeCreated.add(id);
    else if (state) {
      // Not in a state we can start from: drop it, and the exit file its monitor then writes.
      await store.runtimeOf(record).delete(id, true);
      await store.exits.waitFor(id, 2000);
      await rm(join(store.exitDir, id), { force: true });
    }
    await ensureMounted(store, record).catch((err) => store.log.warn('cannot remount rootfs', { id, err: String(err) }));
    return;
  }
  if (state?.status === 'created') {
    // Crashed between recording the start and `runc start`: it never ran, start it again later.
    store.runtimeCreated.add(id);
    await store.save({ ...record, phase: 'created', startedAt: undefined });
    await ensureMounted(store, record).catch((err) => store.log.warn('cannot remount rootfs', { id, err: String(err) }));
    return;
  }
  if (!state || state.status === 'stopped') {
    if (state && (await store.exits.waitFor(id, 2000))) {
      // conmon was about to write the exit file.
      const late = await store.exitOf(id);
      if (late) {
        await applyExit(store, record, late);
        return;
      }
    }
    // Nobody recorded how it ended (monitor killed, or a reboot wiped the runtime state).
    await applyExit(
      store,
      record,
      { exitCode: 255, finishedAt: String(nowNs()), oomKilled: false },
      'the container ended while its monitor was not watching; its exit code is unknown',
    );
    return;
  }
  await ensureMounted(store, record).catch((err) => store.log.warn('cannot remount rootfs', { id, err: String(err) }));
}
