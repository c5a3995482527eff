// Startup: the default network when none exists, then every pod rebuilt from disk. A pod directory
// without pod.json is a RunPodSandbox that never finished and is undone; a ready pod that lost a
// piece (a pinned namespace, its catatonit) is marked NOTREADY.
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { writeDefaultNetwork } from '../network/default-network.ts';
import { readJson } from '../util/atomic-file.ts';
import { nsfsMounts } from './namespaces.ts';
import { pidInitAlive, pidNamespacePath } from './pid-init.ts';
import { fromFile, type PodEntry } from './record-file.ts';
import { rollback } from './rollback.ts';
import { POD_FILE, type PodStore } from './store.ts';

/** Writes the default network when none exists, then rebuilds every pod from disk. */
export async function openPodStore(store: PodStore): Promise<void> {
  await mkdir(store.recordsDir, { recursive: true });
  await mkdir(store.stateDir, { recursive: true });
  if (store.options.defaultNetwork !== false) {
    const loaded = await store.cni.load();
    if (!loaded.network) {
      const file = await writeDefaultNetwork(store.cni.confDir, store.options.defaultNetwork ?? {});
      store.log.info('no CNI network config found; wrote the default network', { file });
    }
  }
  await recoverPods(store);
}

async function recoverPods(store: PodStore): Promise<void> {
  const mounts = await nsfsMounts();
  const ids = new Set<string>();
  for (const id of await readdir(store.recordsDir)) {
    if (!/^[0-9a-f]{64}$/.test(id)) continue;
    ids.add(id);
    const dir = store.recordDir(id);
    let entry: PodEntry;
    try {
      const file = await readJson<Parameters<typeof fromFile>[0]>(join(dir, POD_FILE));
      if (file === undefined) {
        store.log.warn('found an unfinished RunPodSandbox; undoing it', { pod: id });
        await rollback(store, id).catch((err) => store.log.error('cannot undo unfinished pod; will retry at next start', { pod: id, err }));
        continue;
      }
      entry = fromFile(file, join(dir, POD_FILE));
    } catch (err) {
      // Records are written atomically, so this is outside damage: keep it for a human to look at.
      store.log.error('unreadable pod record; leaving it for inspection', { pod: id, err });
      continue;
    }
    store.load(entry);
    if (entry.state === 'SANDBOX_READY') {
      const lost = await lostPieces(entry, mounts);
      if (lost.length > 0) {
        store.log.warn('pod is no longer intact; marking it NOTREADY', { pod: id, lost: lost.join(', ') });
        await store.markNotReady(entry);
      }
    }
    if (entry.pidMode === 'POD' && entry.internals.pidInit && (await pidInitAlive(entry.internals.pidInit))) {
      entry.namespaces.pid = pidNamespacePath(entry.internals.pidInit);
    } else {
      delete entry.namespaces.pid;
    }
  }
  // Namespace files whose pod record is gone (a RemovePodSandbox cut short).
  for (const id of await readdir(store.stateDir)) {
    if (ids.has(id)) continue;
    store.log.warn('found pinned namespaces without a pod; removing them', { pod: id });
    await rollback(store, id).catch((err) => store.log.error('cannot remove leftover namespaces', { pod: id, err }));
  }
}

async function lostPieces(entry: PodEntry, mounts: Map<string, string>): Promise<string[]> {
  const lost: string[] = [];
  for (const kind of ['user', 'net', 'ipc', 'uts'] as const) {
    const path = entry.namespaces[kind];
    if (path && !mounts.has(path)) lost.push(`${kind} namespace`);
  }
  if (entry.pidMode === 'POD' && (!entry.internals.pidInit || !(await pidInitAlive(entry.internals.pidInit)))) lost.push('PID namespace init (catatonit)');
  return lost;
}
