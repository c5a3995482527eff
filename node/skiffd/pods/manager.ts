// Pod sandboxes: building one (pinned namespaces, CNI network, optional PID-namespace init, the
// /etc files), tearing it down, and telling the truth about all of them after a crash.
//
// Crash safety rests on one rule: `pod.json` is written last when a pod is made, so a pod directory
// without it is a RunPodSandbox that never finished, and a restart undoes it from what is on disk
// (the CNI attachment saved before ADD ran, the pinned namespace files, a catatonit tagged with the
// pod id). Stop records NOTREADY before it tears anything down, so a half-stopped pod never looks ready.
import { writeLimits, type CgroupLimits } from '../cgroups/limits.ts';
import { randomBytes } from 'node:crypto';
import { readdir, mkdir, rm, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ServerError, Status } from 'nice-grpc-common';
import type { DeepPartial, LinuxContainerResources, PodSandboxStats, RunPodSandboxRequest } from '../../../proto/gen/runtime/v1/api.ts';
import type { Logger } from '../logger.ts';
import { writeJsonAtomic, readJson } from '../util/atomic-file.ts';
import { cgroupfsPath, removeCgroup } from '../cgroups/layout.ts';
import { type Cni, CniNotReadyError, CniPluginError, resultIps, type NetworkAttachment } from '../network/cni.ts';
import { writeDefaultNetwork, type DefaultNetworkOptions } from '../network/default-network.ts';
import { hostsFile, resolvConf, writePodFiles } from './files.ts';
import { KeyedLock } from '../util/keyed-lock.ts';
import { nowNs } from '../util/clock.ts';
import { applySysctls, nsfsMounts, pinNamespaces, unpinNamespaces } from './namespaces.ts';
import { findPidInitByMarker, pidInitAlive, pidNamespacePath, startPidInit, stopPidInit } from './pid-init.ts';
import { fromFile, toFile, type PodEntry } from './record-file.ts';
import { PodStatsCollector } from './stats.ts';
import type { PodSandboxRecord, PodSandboxStore, PodState } from './types.ts';
import { planPod, type PodPlan } from './validate.ts';
import { pinUserNamespaces } from './userns.ts';

/** What the pods subsystem needs from the containers subsystem. */
export interface PodContainerHooks {
  stopAllInPod(podId: string, timeoutSeconds: number): Promise<unknown>;
  removeAllInPod(podId: string): Promise<unknown>;
}

export interface PodSandboxesOptions {
  /** Persistent records: `<root>/pods/<id>/`. */
  root: string;
  /** Runtime state (pinned namespaces): `<state>/pods/<id>/`. */
  state: string;
  cni: Cni;
  log: Logger;
  /** Runtime handler names RunPodSandbox accepts besides "" (the default). */
  runtimeHandlers?: () => readonly string[];
  containers?: () => PodContainerHooks | undefined;
  /** When the CNI conf dir holds no network, write this default one (false: never). */
  defaultNetwork?: DefaultNetworkOptions | false;
  catatonit?: string;
  /** Whether pods can have user namespaces of their own here, and why not. */
  userNamespaces?: () => Promise<{ supported: boolean; reason: string }>;
}

export interface PodSandboxFilterSpec {
  id?: string;
  state?: PodState;
  labelSelector?: Record<string, string>;
}

const POD_FILE = 'pod.json';
const NETWORK_FILE = 'network.json';

/** The pod's totals: container resources plus overhead, each limit present in either. */
function podLimits(resources: LinuxContainerResources | undefined, overhead: LinuxContainerResources | undefined): CgroupLimits {
  const parts = [resources, overhead].filter((r): r is LinuxContainerResources => !!r);
  for (const r of parts) {
    for (const [field, value] of [
      ['cpu_shares', r.cpuShares],
      ['cpu_quota', r.cpuQuota],
      ['cpu_period', r.cpuPeriod],
      ['memory_limit_in_bytes', r.memoryLimitInBytes],
    ] as const) {
      if (value < 0n && !(field === 'cpu_quota' && value === -1n)) throw new ServerError(Status.INVALID_ARGUMENT, `resources.${field} must not be negative`);
    }
  }
  const sum = (pick: (r: LinuxContainerResources) => bigint) => {
    const values = parts.map(pick).filter((v) => v > 0n);
    return values.length > 0 ? Number(values.reduce((a, b) => a + b, 0n)) : undefined;
  };
  const limits: CgroupLimits = {};
  const shares = sum((r) => r.cpuShares);
  if (shares !== undefined) limits.cpuShares = Math.min(262_144, Math.max(2, shares));
  const period = parts.map((r) => r.cpuPeriod).find((v) => v > 0n);
  const quota = sum((r) => r.cpuQuota);
  if (quota !== undefined) {
    limits.cpuQuotaUs = quota;
    limits.cpuPeriodUs = period ? Number(period) : 100_000;
  }
  const memory = sum((r) => r.memoryLimitInBytes);
  if (memory !== undefined) limits.memoryBytes = memory;
  return limits;
}

function notFound(id: string): never {
  throw new ServerError(Status.NOT_FOUND, `pod sandbox "${id}" not found`);
}

/** Errors from below become gRPC errors a client can act on. */
export function toServerError(err: unknown, action: string): ServerError {
  if (err instanceof ServerError) return err;
  if (err instanceof CniNotReadyError) return new ServerError(Status.FAILED_PRECONDITION, `${action}: network not ready: ${err.message}`);
  if (err instanceof CniPluginError) return new ServerError(Status.INTERNAL, `${action}: ${err.message}`);
  return new ServerError(Status.INTERNAL, `${action}: ${(err as Error)?.message ?? String(err)}`);
}

function nameKey(md: PodSandboxRecord['metadata']): string {
  return `${md.name}_${md.namespace}_${md.uid}_${md.attempt}`;
}

export class PodSandboxes implements PodSandboxStore {
  readonly cni: Cni;
  private readonly entries = new Map<string, PodEntry>();
  private readonly names = new Map<string, string>();
  private readonly lock = new KeyedLock();
  private readonly statsCollector = new PodStatsCollector();
  private readonly log: Logger;
  private readonly recordsDir: string;
  private readonly stateDir: string;

  constructor(private readonly options: PodSandboxesOptions) {
    this.cni = options.cni;
    this.log = options.log;
    this.recordsDir = join(options.root, 'pods');
    this.stateDir = join(options.state, 'pods');
  }

  // ---- PodSandboxStore (read by the containers subsystem) ----

  get(podId: string): PodSandboxRecord | undefined {
    return this.entries.get(podId);
  }

  list(): PodSandboxRecord[] {
    return [...this.entries.values()].sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
  }

  withLock<T>(podId: string, fn: () => Promise<T>): Promise<T> {
    return this.lock.run(podId, fn);
  }

  // ---- startup ----

  /** Writes the default network when none exists, then rebuilds every pod from disk. */
  async open(): Promise<void> {
    await mkdir(this.recordsDir, { recursive: true });
    await mkdir(this.stateDir, { recursive: true });
    if (this.options.defaultNetwork !== false) {
      const loaded = await this.cni.load();
      if (!loaded.network) {
        const file = await writeDefaultNetwork(this.cni.confDir, this.options.defaultNetwork ?? {});
        this.log.info('no CNI network config found; wrote the default network', { file });
      }
    }
    await this.recover();
  }

  private recordDir(id: string): string {
    return join(this.recordsDir, id);
  }

  private nsDir(id: string): string {
    return join(this.stateDir, id, 'ns');
  }

  /** Everything mounted for a pod: the pinned namespaces and the shm tmpfs. */
  private podMounts(id: string): string[] {
    return [...['user', 'net', 'ipc', 'uts'].map((k) => join(this.nsDir(id), k)), join(this.stateDir, id, 'shm')];
  }

  private async recover(): Promise<void> {
    const mounts = await nsfsMounts();
    const ids = new Set<string>();
    for (const id of await readdir(this.recordsDir)) {
      if (!/^[0-9a-f]{64}$/.test(id)) continue;
      ids.add(id);
      const dir = this.recordDir(id);
      let entry: PodEntry;
      try {
        const file = await readJson<Parameters<typeof fromFile>[0]>(join(dir, POD_FILE));
        if (file === undefined) {
          this.log.warn('found an unfinished RunPodSandbox; undoing it', { pod: id });
          await this.rollback(id).catch((err) => this.log.error('cannot undo unfinished pod; will retry at next start', { pod: id, err }));
          continue;
        }
        entry = fromFile(file, join(dir, POD_FILE));
      } catch (err) {
        // Records are written atomically, so this is outside damage: keep it for a human to look at.
        this.log.error('unreadable pod record; leaving it for inspection', { pod: id, err });
        continue;
      }
      this.entries.set(id, entry);
      this.names.set(nameKey(entry.metadata), id);
      if (entry.state === 'SANDBOX_READY') {
        const lost = await this.lostPieces(entry, mounts);
        if (lost.length > 0) {
          this.log.warn('pod is no longer intact; marking it NOTREADY', { pod: id, lost: lost.join(', ') });
          await this.markNotReady(entry);
        }
      }
      if (entry.pidMode === 'POD' && entry.internals.pidInit && (await pidInitAlive(entry.internals.pidInit))) {
        entry.namespaces.pid = pidNamespacePath(entry.internals.pidInit);
      } else {
        delete entry.namespaces.pid;
      }
    }
    // Namespace files whose pod record is gone (a RemovePodSandbox cut short).
    for (const id of await readdir(this.stateDir)) {
      if (ids.has(id)) continue;
      this.log.warn('found pinned namespaces without a pod; removing them', { pod: id });
      await this.rollback(id).catch((err) => this.log.error('cannot remove leftover namespaces', { pod: id, err }));
    }
  }

  private async lostPieces(entry: PodEntry, mounts: Map<string, string>): Promise<string[]> {
    const lost: string[] = [];
    for (const kind of ['user', 'net', 'ipc', 'uts'] as const) {
      const path = entry.namespaces[kind];
      if (path && !mounts.has(path)) lost.push(`${kind} namespace`);
    }
    if (entry.pidMode === 'POD' && (!entry.internals.pidInit || !(await pidInitAlive(entry.internals.pidInit)))) lost.push('PID namespace init (catatonit)');
    return lost;
  }

  /**
   * Undoes whatever a RunPodSandbox left behind for `id`, using only what is on disk. Every step is
   * tried; if CNI DEL fails the record dir (with the saved attachment) stays, so a restart retries it.
   */
  private async rollback(id: string): Promise<void> {
    const dir = this.recordDir(id);
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
          await this.cni.del(attachment, mounts.has(attachment.netns));
        } catch (err) {
          networkReleased = false;
          throw err;
        }
      });
    }
    await step('unpin namespaces', () => unpinNamespaces(this.podMounts(id)));
    await step('remove state dir', () => rm(join(this.stateDir, id), { recursive: true, force: true }));
    if (networkReleased) await step('remove record dir', () => rm(dir, { recursive: true, force: true }));
    if (failures.length > 0) throw new Error(failures.join('; '));
  }

  // ---- RPC operations ----

  /** The pod for an exact id or an unambiguous id prefix. */
  resolve(idOrPrefix: string): PodEntry | undefined {
    if (!idOrPrefix) return undefined;
    const exact = this.entries.get(idOrPrefix);
    if (exact) return exact;
    const matches = [...this.entries.values()].filter((e) => e.id.startsWith(idOrPrefix));
    if (matches.length > 1) throw new ServerError(Status.INVALID_ARGUMENT, `pod sandbox id prefix "${idOrPrefix}" is ambiguous (${matches.length} pods)`);
    return matches[0];
  }

  async run(request: RunPodSandboxRequest): Promise<string> {
    const plan = planPod(request, this.options.runtimeHandlers?.() ?? []);
    if (plan.userNamespace) {
      const support = (await this.options.userNamespaces?.()) ?? { supported: false, reason: 'no support was detected' };
      if (!support.supported)
        throw new ServerError(Status.FAILED_PRECONDITION, `RunPodSandbox: user namespaces are not available on this node: ${support.reason}`);
    }
    const key = nameKey(plan.metadata);
    const taken = this.names.get(key);
    if (taken) {
      throw new ServerError(Status.ALREADY_EXISTS, `pod sandbox name "${key}" is already used by pod ${taken}; remove it first or use a new attempt number`);
    }
    const id = randomBytes(32).toString('hex');
    this.names.set(key, id);
    try {
      return await this.lock.run(id, () => this.create(id, plan));
    } catch (err) {
      this.names.delete(key);
      throw toServerError(err, 'RunPodSandbox');
    }
  }

  private async create(id: string, plan: PodPlan): Promise<string> {
    const dir = this.recordDir(id);
    const createdAt = nowNs();
    await mkdir(dir, { recursive: true });
    try {
      const podNet = plan.networkMode === 'POD';
      const shm = plan.ipcMode === 'POD' ? join(this.stateDir, id, 'shm') : undefined;
      const md = plan.metadata;
      // The network config is read first: a missing plugin fails before anything exists, and a chain
      // with the loopback plugin makes bringing `lo` up here redundant.
      const attachment = podNet
        ? await this.cni.prepare(
            id,
            join(this.nsDir(id), 'net'),
            { K8S_POD_NAMESPACE: md.namespace, K8S_POD_NAME: md.name, K8S_POD_INFRA_CONTAINER_ID: id, K8S_POD_UID: md.uid },
            plan.portMappings.length > 0 ? { portMappings: plan.portMappings } : {},
          )
        : undefined;
      const loopbackUp = !attachment?.network.plugins.some((p) => p.type === 'loopback');
      // The attachment is saved before ADD can run, so a crash during ADD can still be undone with DEL
      // (a DEL whose namespace is gone gets an empty CNI_NETNS); it is written while the pin runs.
      const pinRequest = { net: podNet, ipc: plan.ipcMode === 'POD', uts: podNet, hostname: plan.hostname, shm, loopbackUp };
      const [pinned, saved] = await Promise.allSettled([
        plan.userNamespace ? pinUserNamespaces(this.nsDir(id), plan.userNamespace, pinRequest) : pinNamespaces(this.nsDir(id), pinRequest),
        attachment ? writeJsonAtomic(join(dir, NETWORK_FILE), attachment) : undefined,
      ]);
      if (pinned.status === 'rejected') throw pinned.reason;
      if (saved.status === 'rejected') throw saved.reason;
      const pins = pinned.value;
      const paths = { resolvConf: join(dir, 'resolv.conf'), hostname: join(dir, 'hostname'), hosts: join(dir, 'hosts') };

      // What does not depend on the network runs while the CNI chain does (it is most of the call).
      let network: PodEntry['internals']['network'];
      let ips = { ip: '', additionalIps: [] as string[] };
      const attach = async () => {
        if (!attachment) return;
        attachment.result = await this.cni.add(attachment);
        network = { attachment, attached: true };
        ips = resultIps(attachment.result, attachment.ifname);
      };
      const alongside = async () => {
        const pidInit = plan.pidMode === 'POD' ? await startPidInit(id, pins, this.options.catatonit) : undefined;
        await writePodFiles({ resolvConf: paths.resolvConf, hostname: paths.hostname }, { resolvConf: await resolvConf(plan.dns), hostname: plan.hostname });
        if (plan.config.logDirectory) await mkdir(plan.config.logDirectory, { recursive: true });
        return pidInit;
      };
      // Both finish before a failure is reported, so the rollback never races a running plugin.
      const [attached, side] = await Promise.allSettled([attach(), alongside()]);
      if (attached.status === 'rejected') throw attached.reason;
      if (side.status === 'rejected') throw side.reason;
      const pidInit = side.value;
      await applySysctls(pins, plan.sysctls);
      const hosts = podNet ? hostsFile(plan.hostname, ips.ip) : await readFile('/etc/hosts', 'utf8').catch(() => hostsFile(plan.hostname, ''));
      await writePodFiles({ hosts: paths.hosts }, { hosts });

      const ownsCgroup = !plan.cgroupParent;
      const entry: PodEntry = {
        id,
        metadata: plan.metadata,
        state: 'SANDBOX_READY',
        createdAt,
        labels: { ...plan.config.labels },
        annotations: { ...plan.config.annotations },
        logDirectory: plan.config.logDirectory,
        hostname: plan.hostname,
        namespaces: { ...pins, ...(pidInit ? { pid: pidNamespacePath(pidInit) } : {}) },
        networkMode: plan.networkMode,
        ipcMode: plan.ipcMode,
        pidMode: plan.pidMode,
        ...(plan.userNamespace ? { userNamespace: plan.userNamespace } : {}),
        cgroupParent: ownsCgroup ? `/skiffd/pod-${id.slice(0, 12)}` : cgroupfsPath(plan.cgroupParent),
        runtimeHandler: plan.runtimeHandler,
        resolvConfPath: paths.resolvConf,
        hostnamePath: paths.hostname,
        hostsPath: paths.hosts,
        ...(shm ? { shmPath: shm } : {}),
        ip: ips.ip,
        additionalIps: ips.additionalIps,
        config: plan.config,
        internals: { network, pidInit, ownsCgroup },
      };
      await this.persist(entry);
      this.entries.set(id, entry);
      this.log.info('pod sandbox ready', { pod: id, name: nameKey(plan.metadata), ip: ips.ip || undefined });
      return id;
    } catch (err) {
      await this.rollback(id).catch((undoErr) => this.log.error('cannot undo failed RunPodSandbox; a restart retries', { pod: id, err: undoErr }));
      throw err;
    }
  }

  private persist(entry: PodEntry): Promise<void> {
    return writeJsonAtomic(join(this.recordDir(entry.id), POD_FILE), toFile(entry));
  }

  private async markNotReady(entry: PodEntry): Promise<void> {
    if (entry.state === 'SANDBOX_NOTREADY') return;
    entry.state = 'SANDBOX_NOTREADY';
    await this.persist(entry);
  }

  /**
   * Sets the pod cgroup's CPU and memory limits to the pod's totals (its containers' resources plus
   * the sandbox overhead), as the kubelet does on an in-place pod resize. Containers keep their own.
   */
  async updateResources(idOrPrefix: string, resources: LinuxContainerResources | undefined, overhead: LinuxContainerResources | undefined): Promise<void> {
    if (!idOrPrefix) throw new ServerError(Status.INVALID_ARGUMENT, 'pod_sandbox_id is required');
    if (!resources && !overhead) throw new ServerError(Status.INVALID_ARGUMENT, "resources or overhead is required: the pod's new totals");
    const found = this.resolve(idOrPrefix) ?? notFound(idOrPrefix);
    const limits = podLimits(resources, overhead);
    await this.lock.run(found.id, async () => {
      const entry = this.entries.get(found.id) ?? notFound(idOrPrefix);
      if (entry.state !== 'SANDBOX_READY')
        throw new ServerError(Status.FAILED_PRECONDITION, `pod sandbox ${entry.id} is not ready (${entry.state}): nothing runs in its cgroup`);
      await writeLimits(entry.cgroupParent, limits).catch((err: Error) => {
        throw new ServerError(Status.INTERNAL, `updating the cgroup ${entry.cgroupParent} of pod sandbox ${entry.id}: ${err.message}`);
      });
      this.log.info('pod resources updated', { pod: entry.id, ...limits });
    });
  }

  /** Idempotent; an unknown id is not an error (the API makes Stop idempotent). */
  async stop(idOrPrefix: string): Promise<void> {
    if (!idOrPrefix) throw new ServerError(Status.INVALID_ARGUMENT, 'pod_sandbox_id is required');
    const found = this.resolve(idOrPrefix);
    if (!found) {
      this.log.debug('StopPodSandbox: no such pod; nothing to do', { pod: idOrPrefix });
      return;
    }
    await this.lock
      .run(found.id, async () => {
        const entry = this.entries.get(found.id);
        if (entry) await this.teardown(entry);
      })
      .catch((err) => {
        throw toServerError(err, 'StopPodSandbox');
      });
  }

  /** Everything Stop does; every step can run again after a partial failure. */
  private async teardown(entry: PodEntry): Promise<void> {
    await this.markNotReady(entry);
    await this.options.containers?.()?.stopAllInPod(entry.id, 0);
    if (entry.internals.pidInit) {
      await stopPidInit(entry.internals.pidInit);
      delete entry.namespaces.pid;
    }
    const network = entry.internals.network;
    if (network?.attached) {
      const mounts = await nsfsMounts();
      await this.cni.del(network.attachment, mounts.has(network.attachment.netns));
      network.attached = false;
      entry.ip = '';
      entry.additionalIps = [];
      await this.persist(entry);
    }
  }

  /** Idempotent; removing a pod that does not exist succeeds. */
  async remove(idOrPrefix: string): Promise<void> {
    if (!idOrPrefix) throw new ServerError(Status.INVALID_ARGUMENT, 'pod_sandbox_id is required');
    const found = this.resolve(idOrPrefix);
    if (!found) return;
    await this.lock
      .run(found.id, async () => {
        const entry = this.entries.get(found.id);
        if (!entry) return;
        await this.teardown(entry);
        await this.options.containers?.()?.removeAllInPod(entry.id);
        await unpinNamespaces(this.podMounts(entry.id));
        await rm(join(this.stateDir, entry.id), { recursive: true, force: true });
        if (entry.internals.ownsCgroup) {
          await removeCgroup(entry.cgroupParent).catch((err) => this.log.warn('cannot remove pod cgroup', { pod: entry.id, err }));
        }
        // The record goes first: a crash after this point leaves a directory a restart cleans up.
        await rm(join(this.recordDir(entry.id), POD_FILE), { force: true });
        await rm(this.recordDir(entry.id), { recursive: true, force: true });
        this.entries.delete(entry.id);
        this.statsCollector.forget(entry.id);
        if (this.names.get(nameKey(entry.metadata)) === entry.id) this.names.delete(nameKey(entry.metadata));
        this.log.info('pod sandbox removed', { pod: entry.id });
      })
      .catch((err) => {
        throw toServerError(err, 'RemovePodSandbox');
      });
  }

  /** The pod, with its state refreshed (a pod whose init died is no longer ready). */
  async inspect(idOrPrefix: string): Promise<PodEntry> {
    if (!idOrPrefix) throw new ServerError(Status.INVALID_ARGUMENT, 'pod_sandbox_id is required');
    const entry = this.resolve(idOrPrefix) ?? notFound(idOrPrefix);
    await this.refresh(entry);
    return entry;
  }

  private async refresh(entry: PodEntry): Promise<void> {
    const init = entry.internals.pidInit;
    if (entry.state !== 'SANDBOX_READY' || !init || (await pidInitAlive(init))) return;
    await this.lock.run(entry.id, async () => {
      if (entry.state !== 'SANDBOX_READY' || (await pidInitAlive(init))) return;
      this.log.warn('pod PID namespace init exited; pod is NOTREADY', { pod: entry.id, pid: init.pid });
      delete entry.namespaces.pid;
      await this.markNotReady(entry);
    });
  }

  async filter(spec: PodSandboxFilterSpec): Promise<PodEntry[]> {
    const out: PodEntry[] = [];
    for (const record of this.list()) {
      const entry = record as PodEntry;
      if (spec.id && !entry.id.startsWith(spec.id)) continue;
      await this.refresh(entry);
      if (spec.state && entry.state !== spec.state) continue;
      if (spec.labelSelector && !Object.entries(spec.labelSelector).every(([k, v]) => entry.labels[k] === v)) continue;
      out.push(entry);
    }
    return out;
  }

  /** Verbose facts for PodSandboxStatus(verbose): where everything is, as JSON. */
  verboseInfo(entry: PodEntry): Record<string, string> {
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

  async stats(idOrPrefix: string): Promise<DeepPartial<PodSandboxStats>> {
    if (!idOrPrefix) throw new ServerError(Status.INVALID_ARGUMENT, 'pod_sandbox_id is required');
    const entry = this.resolve(idOrPrefix) ?? notFound(idOrPrefix);
    return this.statsCollector.collect(entry, nowNs).catch((err) => {
      throw toServerError(err, 'PodSandboxStats');
    });
  }

  async listStats(spec: PodSandboxFilterSpec): Promise<DeepPartial<PodSandboxStats>[]> {
    const pods = await this.filter(spec);
    return Promise.all(pods.map((p) => this.statsCollector.collect(p, nowNs))).catch((err) => {
      throw toServerError(err, 'ListPodSandboxStats');
    });
  }
}
