// Undoing a RunPodSandbox that never finished, from what is on disk alone: the CNI attachment saved
// before ADD ran, the pinned namespace files, a catatonit tagged with the pod id.
import { join } from 'node:path';
import { cgroupfsDriver } from '../cgroups/driver.ts';
import type { NetworkAttachment } from '../network/cni.ts';
import { readJson } from '../util/atomic-file.ts';
import { nsfsMounts, unpinNamespaces } from './namespaces.ts';
import { findPidInitByMarker, stopPidInit } from './pid-init.ts';
import { NETWORK_FILE, type PodStore } from './store.ts';
import { removeTree } from '../util/remove-tree.ts';

/**
 * Undoes whatever a RunPodSandbox left behind for `id`. Every step is tried; if CNI DEL fails the
 * record dir (with the saved attachment) stays, so a restart retries it.
 */
export async function rollback(store: PodStore, id: string): Promise<void> {
  const dir = store.recordDir(id);
  const failures: string[] = [];
  const step = async (what: string, fn: () => Promise<unknown>) => {
    try {
      await fn();
    } catch (err) {
      failures.push(`${what}: ${(err as Error).message}`);
    }
  };
  await step('stop catatonit', async () => {
    const init = await findPidInitByMarker(id);
    if (init) await stopPidInit(init);
  });
  let networkReleased = true;
  const attachment = await readJson<NetworkAttachment>(join(dir, NETWORK_FILE)).catch(() => undefined);
  if (attachment) {
    await step('CNI DEL', async () => {
      try {
        const mounts = await nsfsMounts();
        await store.cni.del(attachment, mounts.has(attachment.netns));
      } catch (err) {
        networkReleased = false;
        throw err;
      }
    });
  }
  await step('unpin namespaces', () => unpinNamespaces(store.podMounts(id)));
  // The pod cgroup skiffd would own (a systemd slice made before the record); a missing one is fine.
  const cgroups = store.options.cgroups ?? cgroupfsDriver;
  await step('remove pod cgroup', () => cgroups.removePod(cgroups.podCgroup('', id).path));
  await step('remove state dir', () => removeTree(join(store.stateDir, id)));
  if (networkReleased) await step('remove record dir', () => removeTree(dir));
  if (failures.length > 0) throw new Error(failures.join('; '));
}
