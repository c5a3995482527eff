// RemovePodSandbox: everything Stop does, then the containers, the pinned namespaces, the cgroup and
// the record go. Idempotent.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ContainerEventType } from '../../../proto/gen/runtime/v1/api.ts';
import { cgroupfsDriver } from '../cgroups/driver.ts';
import { requireId, toServerError } from './errors.ts';
import { unpinNamespaces } from './namespaces.ts';
import { teardown } from './stop.ts';
import { POD_FILE, type PodStore } from './store.ts';
import { removeTree } from '../util/remove-tree.ts';

/** Idempotent; removing a pod that does not exist succeeds. */
export async function removePod(store: PodStore, idOrPrefix: string): Promise<void> {
  requireId(idOrPrefix);
  const found = store.resolve(idOrPrefix);
  if (!found) return;
  await store
    .withLock(found.id, async () => {
      const entry = store.get(found.id);
      if (!entry) return;
      await teardown(store, entry);
      await store.options.containers?.()?.removeAllInPod(entry.id);
      await unpinNamespaces(store.podMounts(entry.id));
      await removeTree(join(store.stateDir, entry.id));
      if (entry.internals.ownsCgroup) {
        await (store.options.cgroups ?? cgroupfsDriver)
          .removePod(entry.cgroupParent)
          .catch((err) => store.log.warn('cannot remove pod cgroup', { pod: entry.id, err }));
      }
      // The record goes first: a crash after this point leaves a directory a restart cleans up.
      await rm(join(store.recordDir(entry.id), POD_FILE), { force: true });
      await removeTree(store.recordDir(entry.id));
      store.emit(entry, ContainerEventType.CONTAINER_DELETED_EVENT);
      store.forget(entry);
      store.log.info('pod sandbox removed', { pod: entry.id });
    })
    .catch((err) => {
      throw toServerError(err, 'RemovePodSandbox');
    });
}
