// UpdateContainerResources, and the writable layer's usage for stats.
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ContainerState, type LinuxContainerResources } from '../../../proto/gen/runtime/v1/api.ts';
import { failedPrecondition, internal, invalidArgument } from './errors.ts';
import { resourcesFromJson, resourcesToJson } from './record.ts';
import { rootfsDirs } from './rootfs.ts';
import { toOciResources } from './spec-builder.ts';
import { viewOf } from './status.ts';
import type { ContainerStore } from './store.ts';

/** New resources, or how to make them from the current ones (read under the container's lock). */
export type ResourcesUpdate = LinuxContainerResources | ((current: LinuxContainerResources) => LinuxContainerResources);

export async function updateResources(store: ContainerStore, id: string, update: ResourcesUpdate | undefined): Promise<void> {
  const found = store.find(id);
  if (!update) throw invalidArgument('linux', 'missing');
  await store.withLock(found.id, async () => {
    const record = store.find(found.id);
    // A plugin changes some fields: merged here, so an update running beside it is not lost.
    const resources = typeof update === 'function' ? update(resourcesFromJson(record.resources)) : update;
    const view = await viewOf(store, record);
    if (view.state === ContainerState.CONTAINER_EXITED) throw failedPrecondition(`container ${record.id} has exited`);
    const oci = toOciResources(resources, store.host);
    // A container not started yet is not in the runtime: its config.json is all there is to change.
    const live = view.state === ContainerState.CONTAINER_RUNNING || store.runtimeCreated.has(record.id);
    if (live) {
      await store
        .runtimeOf(record)
        .update(record.id, oci)
        .catch((err) => {
          throw internal(`updating resources of container ${record.id}: ${(err as Error).message}`);
        });
    }
    // Keep config.json in step, so a later `runc update` or reader sees the same limits.
    const spec = await store.runtimeSpec(record.id);
    if (spec) {
      spec.linux.resources = { ...spec.linux.resources, ...oci, devices: spec.linux.resources?.devices };
      await store.saveRuntimeSpec(record.id, spec);
    }
    const merged = { ...resources, oomScoreAdj: resourcesFromJson(record.resources).oomScoreAdj };
    await store.save({ ...store.record(record.id)!, resources: resourcesToJson(merged) });
  });
}

/** Bytes and inodes in the writable layer. */
export async function writableLayerUsage(store: ContainerStore, id: string): Promise<{ bytes: bigint; inodes: bigint }> {
  return du(rootfsDirs(store.dir(id)).upper);
}

async function du(dir: string): Promise<{ bytes: bigint; inodes: bigint }> {
  let bytes = 0n;
  let inodes = 0n;
  const walk = async (d: string) => {
    let entries;
    try {
      entries = await readdir(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = join(d, e.name);
      inodes++;
      try {
        const st = await lstat(p, { bigint: true });
        if (e.isDirectory()) await walk(p);
        else bytes += st.blocks * 512n;
      } catch {
        /* vanished */
      }
    }
  };
  await walk(dir);
  return { bytes, inodes };
}
