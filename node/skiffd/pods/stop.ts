// StopPodSandbox: NOTREADY is recorded first, so a half-stopped pod never looks ready; then the
// containers stop, catatonit goes and the network is released. Idempotent.
import { nsfsMounts } from './namespaces.ts';
import { requireId, toServerError } from './errors.ts';
import { stopPidInit } from './pid-init.ts';
import type { PodEntry } from './record-file.ts';
import type { PodStore } from './store.ts';

/** Idempotent; an unknown id is not an error (the API makes Stop idempotent). */
export async function stopPod(store: PodStore, idOrPrefix: string): Promise<void> {
  requireId(idOrPrefix);
  const found = store.resolve(idOrPrefix);
  if (!found) {
    store.log.debug('StopPodSandbox: no such pod; nothing to do', { pod: idOrPrefix });
    return;
  }
  await store
    .withLock(found.id, async () => {
      const entry = store.get(found.id);
      if (entry) await teardown(store, entry);
    })
    .catch((err) => {
      throw toServerError(err, 'StopPodSandbox');
    });
}

/** Everything Stop does; every step can run again after a partial failure. Call it under the pod's lock. */
export async function teardown(store: PodStore, entry: PodEntry): Promise<void> {
  await store.markNotReady(entry);
  await store.options.containers?.()?.stopAllInPod(entry.id, 0);
  // Where containerd tells plugins: containers stopped, the network still there.
  await store.options.plugins?.()?.stopPodSandbox(entry);
  if (entry.internals.pidInit) {
    await stopPidInit(entry.internals.pidInit);
    delete entry.namespaces.pid;
  }
  const network = entry.internals.network;
  if (network?.attached) {
    const mounts = await nsfsMounts();
    await store.cni.del(network.attachment, mounts.has(network.attachment.netns));
    network.attached = false;
    entry.ip = '';
    entry.additionalIps = [];
    await store.persist(entry);
  }
}
