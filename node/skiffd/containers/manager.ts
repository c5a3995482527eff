// The container subsystem as the rest of the daemon sees it: one object per daemon, each call
// handed to the file of its operation (create.ts, start.ts, stop.ts, exec.ts, status.ts,
// resources.ts, recovery.ts) over the store (store.ts) that owns records, locking and persistence.
import type { CreateContainerRequest } from '../../../proto/gen/runtime/v1/api.ts';
import type { CpuRate } from '../cgroups/cpu-rate.ts';
import type { RuntimeHandlers } from '../oci/handlers.ts';
import type { OciRuntime } from '../oci/runtime.ts';
import type { OciSpec } from '../oci/spec.ts';
import { createContainer } from './create.ts';
import { checkpoint } from './checkpoint.ts';
import { execSync, reopenLog } from './exec.ts';
import type { ContainerRecord } from './record.ts';
import { recoverContainers } from './recovery.ts';
import { type ResourcesUpdate, updateResources, writableLayerUsage } from './resources.ts';
import { startContainer } from './start.ts';
import { listViews, viewOf } from './status.ts';
import { removeContainer, stopContainer } from './stop.ts';
import { ContainerStore } from './store.ts';
import type { ContainerManagerOptions, ContainerView } from './types.ts';

export type { ContainerEvent, ContainerLogger, ContainerManagerOptions, ContainerView, ImageResolver, PodLookup, ResolvedImage } from './types.ts';

export class ContainerManager {
  private readonly store: ContainerStore;

  constructor(options: ContainerManagerOptions) {
    this.store = new ContainerStore(options);
  }

  get exitDir(): string {
    return this.store.exitDir;
  }
  get socketDir(): string {
    return this.store.socketDir;
  }
  /** The OCI runtime of each runtime handler. */
  get runtimes(): RuntimeHandlers {
    return this.store.runtimes;
  }
  /** The OCI runtime a container runs under (its pod's handler). */
  runtimeOf(record: ContainerRecord): OciRuntime {
    return this.store.runtimeOf(record);
  }
  /** `event` with a ContainerEvent at every create, start, stop and delete. */
  get events() {
    return this.store.events;
  }
  /** CPU readings for usage_nano_cores, one per live container. */
  get cpuRate(): CpuRate {
    return this.store.cpuRate;
  }

  /** Loads every record, reconciles it with the runtime and conmon's exit files, starts watching exits. */
  init(): Promise<void> {
    return recoverContainers(this.store);
  }

  async close(): Promise<void> {
    this.store.exits.close();
    this.store.oomKills.close();
    this.store.runtimes.close();
    this.store.events.removeAllListeners();
  }

  // ---------------------------------------------------------------- queries

  get(id: string): ContainerRecord | undefined {
    return this.store.get(id);
  }

  async status(id: string): Promise<ContainerView> {
    return viewOf(this.store, this.store.find(id));
  }

  list(): Promise<ContainerView[]> {
    return listViews(this.store);
  }

  /** The views of one pod's containers. */
  listInPod(podId: string): Promise<ContainerView[]> {
    return listViews(this.store, podId);
  }

  listByPod(podId: string): ContainerRecord[] {
    return this.store.listByPod(podId);
  }

  runtimeSpec(id: string): Promise<OciSpec | undefined> {
    return this.store.runtimeSpec(id);
  }

  /** The container's config.json as JSON text. */
  runtimeSpecText(id: string): Promise<string | undefined> {
    return this.store.runtimeSpecText(id);
  }

  paths(id: string) {
    return this.store.paths(id);
  }

  /** Bytes and inodes in the writable layer. */
  writableLayerUsage(id: string): Promise<{ bytes: bigint; inodes: bigint }> {
    return writableLayerUsage(this.store, id);
  }

  /** Pending exit waits (leak checks). */
  pendingExitWaits(): number {
    return this.store.exits.pendingWaits();
  }

  // ---------------------------------------------------------------- operations

  create(request: CreateContainerRequest): Promise<string> {
    return createContainer(this.store, request);
  }

  start(id: string): Promise<void> {
    return startContainer(this.store, id);
  }

  /** Stop signal, then SIGKILL after timeoutSeconds. Stopping a stopped container is fine. */
  stop(id: string, timeoutSeconds: number): Promise<void> {
    return stopContainer(this.store, id, timeoutSeconds);
  }

  /** Kills a live container and deletes everything of it. Unknown ids are fine (idempotent). */
  remove(id: string): Promise<void> {
    return removeContainer(this.store, id);
  }

  async stopAllInPod(podId: string, timeoutSeconds: number): Promise<void> {
    await Promise.all(this.store.listByPod(podId).map((r) => stopContainer(this.store, r.id, timeoutSeconds)));
  }

  async removeAllInPod(podId: string): Promise<void> {
    await Promise.all(this.store.listByPod(podId).map((r) => removeContainer(this.store, r.id)));
  }

  execSync(id: string, cmd: string[], timeoutSeconds: number): Promise<{ stdout: Buffer; stderr: Buffer; exitCode: number }> {
    return execSync(this.store, id, cmd, timeoutSeconds);
  }

  /** Dumps a running container with CRIU into a tar archive at `location`; it keeps running. */
  checkpoint(id: string, location: string): Promise<void> {
    return checkpoint(this.store, id, location);
  }

  /** Asks conmon to reopen the log file (after the kubelet rotated it). */
  reopenLog(id: string): Promise<void> {
    return reopenLog(this.store, id);
  }

  updateResources(id: string, update: ResourcesUpdate | undefined): Promise<void> {
    return updateResources(this.store, id, update);
  }
}
