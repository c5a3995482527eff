// NRI in skiffd: the runtime's pods and containers shown to plugins (convert.ts), the lifecycle
// events at the points containerd 2.1 sends them, adjustments applied to the OCI spec of a container
// being created, and the updates and evictions plugins ask for carried out. Off when [nri] enable is
// false; with no plugin connected, each event costs a map update and nothing else.
import { ServerError, Status } from 'nice-grpc-common';
import type { LinuxContainerResources } from '../../../proto/gen/runtime/v1/api.ts';
import { ContainerEventType } from '../../../proto/gen/runtime/v1/api.ts';
import { ContainerState, Event, type Container, type ContainerEviction, type ContainerUpdate, type PodSandbox } from '../../../proto/gen/nri/v1alpha1/api.ts';
import type { ContainerEvent, ContainerView } from '../containers/manager.ts';
import type { ContainerRecord } from '../containers/record.ts';
import type { Logger } from '../logger.ts';
import type { OciSpec } from '../oci/spec.ts';
import type { PodSandboxRecord } from '../pods/types.ts';
import { Adaptation } from './adaptation.ts';
import { AdjustmentError, adjustSpec } from './adjust-spec.ts';
import type { NriConfig } from './config.ts';
import { containerToNri, criStateToNri, podToNri } from './convert.ts';
import { ConflictError } from './merge.ts';
import { PluginRefusal } from './plugin.ts';
import { fromCriResources, toCriResources } from './resources.ts';

export { NRI_DEFAULTS, type NriConfig } from './config.ts';

/** What NRI needs of the rest of skiffd. */
export interface NriRuntime {
  pod(id: string): PodSandboxRecord | undefined;
  pods(): PodSandboxRecord[];
  container(id: string): ContainerRecord | undefined;
  /** Every container with its state. */
  containers(): Promise<ContainerView[]>;
  spec(id: string): Promise<OciSpec | undefined>;
  /** Changes a container's resources; `merge` gets the current ones under the container's lock. */
  updateResources(id: string, merge: (current: LinuxContainerResources) => LinuxContainerResources): Promise<void>;
  stop(id: string, timeoutSeconds: number): Promise<void>;
  /** Container lifecycle events (stops and removals that no CRI call asked for, such as exits). */
  events: { on(event: 'event', listener: (e: ContainerEvent) => void): unknown };
}

type Lifecycle = 'created' | 'running' | 'stopped';

export class NodePlugins {
  private readonly adaptation: Adaptation | undefined;
  private runtime: NriRuntime | undefined;
  /** Where each pod and container is in its life as plugins were told (containerd's rules: each stop and removal told once). */
  private readonly lifecycle = new Map<string, Lifecycle>();
  /** Specs of containers plugins were told about, so a removal can still describe the container. */
  private readonly specs = new Map<string, OciSpec>();

  constructor(
    readonly config: NriConfig,
    private readonly log: Logger,
    runtimeInfo: { name: string; version: string },
  ) {
    if (!config.enable) return;
    this.adaptation = new Adaptation(config, log, runtimeInfo, {
      snapshot: () => this.snapshot(),
      apply: (updates, evictions, why) => this.apply(updates, evictions, why),
    });
  }

  get enabled(): boolean {
    return this.adaptation !== undefined;
  }

  /** Connects NRI to the runtime, then starts pre-installed plugins and the socket. */
  async start(runtime: NriRuntime): Promise<void> {
    if (!this.adaptation) {
      this.log.info('NRI is disabled by configuration');
      return;
    }
    this.runtime = runtime;
    // What exists already (after a restart) is stopped and removed once, as if it had been seen made.
    for (const pod of runtime.pods()) this.lifecycle.set(pod.id, pod.state === 'SANDBOX_READY' ? 'running' : 'stopped');
    for (const view of await runtime.containers()) this.lifecycle.set(view.record.id, stateOf(view.state));
    runtime.events.on('event', (e) => this.onContainerEvent(e));
    await this.adaptation.start();
  }

  async stop(): Promise<void> {
    await this.adaptation?.stop();
  }

  /**
   * Held by a CRI call that makes a pod or container, for its whole length: no plugin is synchronized
   * meanwhile, so one that connects sees it either in its snapshot or in the events that follow.
   * Waits first for a synchronization under way (bounded). Call the result once the call is done.
   */
  async blockSync(): Promise<() => void> {
    return this.adaptation ? this.adaptation.gate.block() : () => {};
  }

  /** Resolves once everything plugins were to be told so far has been told. */
  async flush(): Promise<void> {
    if (this.adaptation?.active) await this.adaptation.exclusive(async () => {});
  }

  // ---- pods ----

  /** After RunPodSandbox. A plugin's refusal fails the pod (the caller removes it). */
  async runPodSandbox(podId: string): Promise<void> {
    this.lifecycle.set(podId, 'running');
    const pod = this.runtime?.pod(podId);
    if (pod) await this.event(Event.RUN_POD_SANDBOX, pod);
  }

  /** Once the pod's containers are stopped (StopPodSandbox, RemovePodSandbox). Told once. */
  async stopPodSandbox(pod: PodSandboxRecord): Promise<void> {
    const state = this.lifecycle.get(pod.id);
    if (state !== 'created' && state !== 'running') return;
    this.lifecycle.set(pod.id, 'stopped');
    await this.event(Event.STOP_POD_SANDBOX, pod).catch((err) => this.log.error('NRI pod stop notification failed', { pod: pod.id, err: String(err) }));
  }

  /** After RemovePodSandbox, with the pod as it was. Told once. */
  async removePodSandbox(pod: PodSandboxRecord): Promise<void> {
    if (!this.lifecycle.has(pod.id)) return;
    this.lifecycle.delete(pod.id);
    await this.event(Event.REMOVE_POD_SANDBOX, pod).catch((err) => this.log.error('NRI pod removal notification failed', { pod: pod.id, err: String(err) }));
  }

  // ---- containers ----

  /**
   * Asks plugins to adjust a container being created and applies what they answer to `spec`, and
   * carries out the updates and evictions of other containers they ask for. A refusal or a conflict
   * between plugins fails the create.
   */
  async createContainer(
    pod: PodSandboxRecord,
    record: ContainerRecord,
    spec: OciSpec,
    injectCdiDevices: (spec: OciSpec, names: string[]) => void,
  ): Promise<void> {
    this.lifecycle.set(record.id, 'created');
    const adaptation = this.adaptation;
    if (!adaptation?.active) return;
    const result = await adaptation
      .exclusive(() => adaptation.createContainer({ pod: podToNri(pod), container: containerToNri(record, spec, ContainerState.CONTAINER_UNKNOWN) }))
      .catch((err) => {
        throw refusal('CreateContainer', err);
      });
    try {
      adjustSpec(spec, result.adjust, { injectCdiDevices });
    } catch (err) {
      if (err instanceof ServerError) throw err;
      throw new ServerError(Status.INVALID_ARGUMENT, `failed to NRI-adjust container spec: ${(err as Error).message}`);
    }
    this.specs.set(record.id, spec);
    const failed = await this.apply(result.update, result.evict, `creation of container ${record.id}`);
    if (failed.length > 0) this.log.warn('pre-create NRI updates failed', { failed: failed.map((u) => u.containerId).join(',') });
  }

  /** A create failed after plugins adjusted it: they are told it stopped and went, as containerd does. */
  async createFailed(pod: PodSandboxRecord, record: ContainerRecord, spec: OciSpec): Promise<void> {
    if (!this.adaptation?.active || this.lifecycle.get(record.id) === undefined) return;
    const removed = { ...record };
    this.specs.set(record.id, spec);
    await this.containerStopped(removed, pod);
    await this.containerRemoved(removed, pod);
  }

  async postCreateContainer(id: string): Promise<void> {
    await this.containerEvent(Event.POST_CREATE_CONTAINER, id, ContainerState.CONTAINER_CREATED).catch((err) =>
      this.log.error('NRI post-create notification failed', { id, err: String(err) }),
    );
  }

  /** Before the runtime starts the container; a refusal fails the start. */
  async startContainer(record: ContainerRecord): Promise<void> {
    this.lifecycle.set(record.id, 'running');
    const adaptation = this.adaptation;
    if (!adaptation?.active) return;
    const pod = this.runtime?.pod(record.podSandboxId);
    const spec = await this.specOf(record.id);
    if (!pod || !spec) return;
    await adaptation
      .exclusive(() => adaptation.stateChange(Event.START_CONTAINER, podToNri(pod), containerToNri(record, spec, ContainerState.CONTAINER_CREATED)))
      .catch((err) => {
        throw refusal('StartContainer', err);
      });
  }

  async postStartContainer(id: string): Promise<void> {
    await this.containerEvent(Event.POST_START_CONTAINER, id, ContainerState.CONTAINER_RUNNING).catch((err) =>
      this.log.error('NRI post-start notification failed', { id, err: String(err) }),
    );
  }

  /** Before UpdateContainerResources: plugins may change what is applied. Resolves with the resources to apply. */
  async updateContainer(id: string, resources: LinuxContainerResources): Promise<LinuxContainerResources> {
    const adaptation = this.adaptation;
    const record = this.runtime?.container(id);
    if (!adaptation?.active || !record) return resources;
    const pod = this.runtime?.pod(record.podSandboxId);
    const spec = await this.specOf(record.id);
    if (!pod || !spec) return resources;
    const result = await adaptation
      .exclusive(() =>
        adaptation.updateContainer({
          pod: podToNri(pod),
          container: containerToNri(record, spec, ContainerState.CONTAINER_RUNNING),
          linuxResources: fromCriResources(resources),
        }),
      )
      .catch((err) => {
        throw refusal('UpdateContainer', err);
      });
    const { update, resources: asked } = result.result();
    const failed = await this.apply(update, result.evict, `update of container ${id}`);
    if (failed.length > 0) this.log.warn('pre-update NRI updates failed', { failed: failed.map((u) => u.containerId).join(',') });
    return { ...toCriResources(asked, resources.oomScoreAdj), memorySwapLimitInBytes: resources.memorySwapLimitInBytes };
  }

  async postUpdateContainer(id: string): Promise<void> {
    await this.containerEvent(Event.POST_UPDATE_CONTAINER, id, ContainerState.CONTAINER_RUNNING).catch((err) =>
      this.log.error('NRI post-update notification failed', { id, err: String(err) }),
    );
  }

  // ---- internals ----

  private onContainerEvent(e: ContainerEvent): void {
    const record = e.record ?? this.runtime?.container(e.containerId);
    if (!record) return;
    const pod = this.runtime?.pod(record.podSandboxId);
    if (e.type === ContainerEventType.CONTAINER_STOPPED_EVENT) void this.containerStopped(record, pod);
    else if (e.type === ContainerEventType.CONTAINER_DELETED_EVENT) void this.containerRemoved(record, pod);
  }

  /** A container stopped (asked to, or exited): StopContainer, once; the updates plugins ask are made. */
  private async containerStopped(record: ContainerRecord, pod: PodSandboxRecord | undefined): Promise<void> {
    const state = this.lifecycle.get(record.id);
    if (state !== 'created' && state !== 'running') return;
    this.lifecycle.set(record.id, 'stopped');
    const adaptation = this.adaptation;
    if (!adaptation?.active) return;
    const spec = await this.specOf(record.id);
    try {
      const result = await adaptation.exclusive(() =>
        adaptation.stopContainer({ pod: podOrStub(pod, record), container: containerToNri(record, spec, ContainerState.CONTAINER_STOPPED) }),
      );
      await this.apply(result.update, [], `stop of container ${record.id}`);
    } catch (err) {
      this.log.error('NRI failed to stop container', { id: record.id, err: String(err) });
    }
  }

  /** A container was removed: RemoveContainer, once (StopContainer first if it was not told yet). */
  private async containerRemoved(record: ContainerRecord, pod: PodSandboxRecord | undefined): Promise<void> {
    if (!this.lifecycle.has(record.id)) return;
    await this.containerStopped(record, pod);
    this.lifecycle.delete(record.id);
    const adaptation = this.adaptation;
    const spec = this.specs.get(record.id) ?? (await this.specOf(record.id));
    this.specs.delete(record.id);
    if (!adaptation?.active) return;
    await adaptation
      .exclusive(() => adaptation.stateChange(Event.REMOVE_CONTAINER, podOrStub(pod, record), containerToNri(record, spec, ContainerState.CONTAINER_STOPPED)))
      .catch((err) => this.log.error('NRI container removal notification failed', { id: record.id, err: String(err) }));
  }

  private async event(event: Event, pod: PodSandboxRecord): Promise<void> {
    const adaptation = this.adaptation;
    if (!adaptation?.active) return;
    await adaptation
      .exclusive(() => adaptation.stateChange(event, podToNri(pod)))
      .catch((err) => {
        throw refusal(Event[event], err);
      });
  }

  private async containerEvent(event: Event, id: string, state: ContainerState): Promise<void> {
    const adaptation = this.adaptation;
    const record = this.runtime?.container(id);
    if (!adaptation?.active || !record) return;
    const pod = this.runtime?.pod(record.podSandboxId);
    const spec = await this.specOf(id);
    if (!pod || !spec) return;
    await adaptation.exclusive(() => adaptation.stateChange(event, podToNri(pod), containerToNri(record, spec, state)));
  }

  private async specOf(id: string): Promise<OciSpec | undefined> {
    return (await this.runtime?.spec(id)) ?? this.specs.get(id);
  }

  private async snapshot(): Promise<{ pods: PodSandbox[]; containers: Container[] }> {
    const runtime = this.runtime;
    if (!runtime) return { pods: [], containers: [] };
    // Only pods plugins have been or are about to be told of: one being made is told by its own event.
    const pods = runtime
      .pods()
      .filter((pod) => this.lifecycle.has(pod.id))
      .map(podToNri);
    const containers: Container[] = [];
    for (const view of await runtime.containers()) {
      const state = criStateToNri(view.state);
      // As containerd: stopped containers are not shown.
      if (state === ContainerState.CONTAINER_STOPPED || state === ContainerState.CONTAINER_UNKNOWN) continue;
      const spec = await runtime.spec(view.record.id);
      if (spec) containers.push(containerToNri(view.record, spec, state));
    }
    return { pods, containers };
  }

  /**
   * Carries out what plugins asked: evictions stop the container, updates change its resources (only
   * the fields a plugin set; the rest stay as they are). Resolves with the updates that failed.
   */
  private async apply(updates: ContainerUpdate[], evictions: ContainerEviction[], why: string): Promise<ContainerUpdate[]> {
    const runtime = this.runtime;
    if (!runtime) return updates;
    for (const e of evictions) {
      const record = runtime.container(e.containerId);
      if (!record) continue;
      this.log.warn('NRI plugin evicts container', { id: record.id, reason: e.reason, by: why });
      await runtime.stop(record.id, 0).catch((err) => this.log.error('NRI eviction failed', { id: record.id, err: String(err) }));
    }
    const failed: ContainerUpdate[] = [];
    for (const u of updates) {
      const record = runtime.container(u.containerId);
      const r = u.linux?.resources;
      if (!record || !r) continue;
      const asked = toCriResources(r);
      const merge = (current: LinuxContainerResources): LinuxContainerResources => ({
        ...current,
        cpuShares: r.cpu?.shares ? asked.cpuShares : current.cpuShares,
        cpuQuota: r.cpu?.quota ? asked.cpuQuota : current.cpuQuota,
        cpuPeriod: r.cpu?.period ? asked.cpuPeriod : current.cpuPeriod,
        cpusetCpus: r.cpu?.cpus || current.cpusetCpus,
        cpusetMems: r.cpu?.mems || current.cpusetMems,
        memoryLimitInBytes: r.memory?.limit ? asked.memoryLimitInBytes : current.memoryLimitInBytes,
        memorySwapLimitInBytes: r.memory?.swap ? asked.memorySwapLimitInBytes : current.memorySwapLimitInBytes,
        hugepageLimits: r.hugepageLimits.length > 0 ? asked.hugepageLimits : current.hugepageLimits,
        unified: { ...current.unified, ...asked.unified },
      });
      try {
        await runtime.updateResources(record.id, merge);
        this.log.info('NRI plugin updated container resources', { id: record.id, by: why });
      } catch (err) {
        this.log.warn('NRI container update failed', { id: record.id, by: why, err: (err as Error).message });
        if (!u.ignoreFailure) failed.push(u);
      }
    }
    return failed;
  }
}

function stateOf(state: number): Lifecycle {
  const s = criStateToNri(state);
  return s === ContainerState.CONTAINER_CREATED ? 'created' : s === ContainerState.CONTAINER_RUNNING ? 'running' : 'stopped';
}

/** A pod already gone: what is known of it from its container. */
function podOrStub(pod: PodSandboxRecord | undefined, record: ContainerRecord): PodSandbox {
  if (pod) return podToNri(pod);
  return { id: record.podSandboxId, name: '', uid: '', namespace: '', labels: {}, annotations: {}, runtimeHandler: '', linux: undefined, pid: 0, ips: [] };
}

/** A plugin's refusal or two plugins' conflict, as the CRI client sees it. */
function refusal(event: string, err: unknown): Error {
  if (err instanceof ServerError) return err;
  if (err instanceof PluginRefusal || err instanceof ConflictError || err instanceof AdjustmentError) {
    return new ServerError(Status.UNKNOWN, `NRI ${event} failed: ${err.message}`);
  }
  return new ServerError(Status.INTERNAL, `NRI ${event} failed: ${(err as Error).message}`);
}
