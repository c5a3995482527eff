// PodSandboxStatus and ListPodSandbox: a pod with its state refreshed (a pod whose PID namespace init
// died is no longer ready), the pods matching a filter, and the verbose facts of one.
import { notFound, requireId } from './errors.ts';
import { pidInitAlive } from './pid-init.ts';
import type { PodEntry } from './record-file.ts';
import type { PodStore } from './store.ts';
import type { PodSandboxFilterSpec } from './types.ts';

/** The pod, with its state refreshed (a pod whose init died is no longer ready). */
export async function inspectPod(store: PodStore, idOrPrefix: string): Promise<PodEntry> {
  requireId(idOrPrefix);
  const entry = store.resolve(idOrPrefix) ?? notFound(idOrPrefix);
  await refresh(store, entry);
  return entry;
}

async function refresh(store: PodStore, entry: PodEntry): Promise<void> {
  const init = entry.internals.pidInit;
  if (entry.state !== 'SANDBOX_READY' || !init || (await pidInitAlive(init))) return;
  await store.withLock(entry.id, async () => {
    if (entry.state !== 'SANDBOX_READY' || (await pidInitAlive(init))) return;
    store.log.warn('pod PID namespace init exited; pod is NOTREADY', { pod: entry.id, pid: init.pid });
    delete entry.namespaces.pid;
    await store.markNotReady(entry);
  });
}

export async function filterPods(store: PodStore, spec: PodSandboxFilterSpec): Promise<PodEntry[]> {
  const out: PodEntry[] = [];
  for (const entry of store.list()) {
    if (spec.id && !entry.id.startsWith(spec.id)) continue;
    await refresh(store, entry);
    if (spec.state && entry.state !== spec.state) continue;
    if (spec.labelSelector && !Object.entries(spec.labelSelector).every(([k, v]) => entry.labels[k] === v)) continue;
    out.push(entry);
  }
  return out;
}

/** Verbose facts for PodSandboxStatus(verbose): where everything is, as JSON. */
export function verboseInfo(entry: PodEntry): Record<string, string> {
  const info = {
    id: entry.id,
    runtimeHandler: entry.runtimeHandler,
    hostname: entry.hostname,
    namespaces: entry.namespaces,
    namespaceModes: { network: entry.networkMode, ipc: entry.ipcMode, pid: entry.pidMode },
    pid: entry.internals.pidInit?.pid ?? 0,
    cgroupParent: entry.cgroupParent,
    files: { resolvConf: entry.resolvConfPath, hostname: entry.hostnamePath, hosts: entry.hostsPath, shm: entry.shmPath ?? null },
    network: entry.internals.network
      ? {
          name: entry.internals.network.attachment.network.name,
          configFile: entry.internals.network.attachment.network.source,
          attached: entry.internals.network.attached,
          netns: entry.internals.network.attachment.netns,
          result: entry.internals.network.attachment.result,
        }
      : null,
    config: {
      hostname: entry.config.hostname,
      logDirectory: entry.config.logDirectory,
      dnsConfig: entry.config.dnsConfig,
      portMappings: entry.config.portMappings,
      sysctls: entry.config.linux?.sysctls ?? {},
      cgroupParent: entry.config.linux?.cgroupParent ?? '',
    },
  };
  return { info: JSON.stringify(info, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)) };
}
