// Pod sandboxes as the rest of the daemon sees them: one object per daemon, each call handed to the
// file of its operation (run.ts, stop.ts, remove.ts, status.ts, resources.ts, pod-stats.ts,
// recovery.ts) over the store (store.ts) that owns records, locking and persistence.
//
// Crash safety rests on one rule: `pod.json` is written last when a pod is made, so a pod directory
// without it is a RunPodSandbox that never finished, and a restart undoes it from what is on disk
// (rollback.ts). Stop records NOTREADY before it tears anything down, so a half-stopped pod never
// looks ready.
import type { DeepPartial, LinuxContainerResources, PodSandboxStats, RunPodSandboxRequest } from '../../../proto/gen/runtime/v1/api.ts';
import type { Cni } from '../network/cni.ts';
import { listPodStats, podStats } from './pod-stats.ts';
import type { PodEntry } from './record-file.ts';
import { openPodStore } from './recovery.ts';
import { removePod } from './remove.ts';
import { updatePodResources } from './resources.ts';
import { runPod } from './run.ts';
import { filterPods, inspectPod, verboseInfo } from './status.ts';
import { stopPod } from './stop.ts';
import { PodStore } from './store.ts';
import type { PodSandboxesOptions, PodSandboxFilterSpec, PodSandboxRecord, PodSandboxStore } from './types.ts';

export type { PodContainerHooks, PodSandboxesOptions, PodSandboxFilterSpec } from './types.ts';

export class PodSandboxes implements PodSandboxStore {
  private readonly store: PodStore;

  constructor(options: PodSandboxesOptions) {
    this.store = new PodStore(options);
  }

  get cni(): Cni {
    return this.store.cni;
  }

  /** `event` with a PodSandboxEvent when a pod is made, stops or goes (GetContainerEvents). */
  get events() {
    return this.store.events;
  }

  // ---- PodSandboxStore (read by the containers subsystem) ----

  get(podId: string): PodSandboxRecord | undefined {
    return this.store.get(podId);
  }

  list(): PodSandboxRecord[] {
    return this.store.list();
  }

  withLock<T>(podId: string, fn: () => Promise<T>): Promise<T> {
    return this.store.withLock(podId, fn);
  }

  // ---- startup ----

  /** Writes the default network when none exists, then rebuilds every pod from disk. */
  open(): Promise<void> {
    return openPodStore(this.store);
  }

  // ---- RPC operations ----

  /** The pod for an exact id or an unambiguous id prefix. */
  resolve(idOrPrefix: string): PodEntry | undefined {
    return this.store.resolve(idOrPrefix);
  }

  run(request: RunPodSandboxRequest): Promise<string> {
    return runPod(this.store, request);
  }

  /** Sets the pod cgroup's limits to the pod's totals, as the kubelet does on an in-place pod resize. */
  updateResources(idOrPrefix: string, resources: LinuxContainerResources | undefined, overhead: LinuxContainerResources | undefined): Promise<void> {
    return updatePodResources(this.store, idOrPrefix, resources, overhead);
  }

  /** Idempotent; an unknown id is not an error (the API makes Stop idempotent). */
  stop(idOrPrefix: string): Promise<void> {
    return stopPod(this.store, idOrPrefix);
  }

  /** Idempotent; removing a pod that does not exist succeeds. */
  remove(idOrPrefix: string): Promise<void> {
    return removePod(this.store, idOrPrefix);
  }

  /** The pod, with its state refreshed (a pod whose init died is no longer ready). */
  inspect(idOrPrefix: string): Promise<PodEntry> {
    return inspectPod(this.store, idOrPrefix);
  }

  filter(spec: PodSandboxFilterSpec): Promise<PodEntry[]> {
    return filterPods(this.store, spec);
  }

  /** Verbose facts for PodSandboxStatus(verbose): where everything is, as JSON. */
  verboseInfo(entry: PodEntry): Record<string, string> {
    return verboseInfo(entry);
  }

  stats(idOrPrefix: string): Promise<DeepPartial<PodSandboxStats>> {
    return podStats(this.store, idOrPrefix);
  }

  listStats(spec: PodSandboxFilterSpec): Promise<DeepPartial<PodSandboxStats>[]> {
    return listPodStats(this.store, spec);
  }
}
