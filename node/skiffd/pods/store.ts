// The pod store: every fact lives in <root>/pods/<id>/pod.json (written atomically, and last when a
// pod is made); the in-memory maps are only a cache rebuilt from disk at startup. The store owns that
// cache, the name index, the per-pod lock and the paths of a pod's files; the operations (run.ts,
// stop.ts, remove.ts, recovery.ts, status.ts, resources.ts, pod-stats.ts) work through it.
import { EventEmitter } from 'node:events';
import { join } from 'node:path';
import { ContainerEventType } from '../../../proto/gen/runtime/v1/api.ts';
import type { Logger } from '../logger.ts';
import type { Cni } from '../network/cni.ts';
import { STATE_ENTRIES } from '../state-dir.ts';
import { writeJsonAtomic } from '../util/atomic-file.ts';
import { nowNs } from '../util/clock.ts';
import { KeyedLock } from '../util/keyed-lock.ts';
import { ServerError, Status } from './errors.ts';
import { toFile, type PodEntry } from './record-file.ts';
import { PodStatsCollector } from './stats.ts';
import type { PodSandboxesOptions, PodSandboxEvent, PodSandboxRecord } from './types.ts';

export const POD_FILE = 'pod.json';
export const NETWORK_FILE = 'network.json';

/** The name a pod is unique by (as the kubelet composes it). */
export function nameKey(md: PodSandboxRecord['metadata']): string {
  return `${md.name}_${md.namespace}_${md.uid}_${md.attempt}`;
}

export class PodStore {
  readonly cni: Cni;
  readonly log: Logger;
  /** Persistent records: `<root>/pods/<id>/`. */
  readonly recordsDir: string;
  /** Runtime state (pinned namespaces): `<state>/pods/<id>/`. */
  readonly stateDir: string;
  readonly statsCollector = new PodStatsCollector();
  /** `event` with a PodSandboxEvent when a pod is made, stops or goes. */
  readonly events = new EventEmitter();
  private readonly entries = new Map<string, PodEntry>();
  private readonly names = new Map<string, string>();
  private readonly lock = new KeyedLock();

  constructor(readonly options: PodSandboxesOptions) {
    this.cni = options.cni;
    this.log = options.log;
    this.recordsDir = join(options.root, 'pods');
    this.stateDir = join(options.state, STATE_ENTRIES.pods);
    this.events.setMaxListeners(0);
  }

  /** Runs fn alone among the calls on this pod. */
  withLock<T>(podId: string, fn: () => Promise<T>): Promise<T> {
    return this.lock.run(podId, fn);
  }

  // ---------------------------------------------------------------- paths

  recordDir(id: string): string {
    return join(this.recordsDir, id);
  }

  nsDir(id: string): string {
    return join(this.stateDir, id, 'ns');
  }

  /** Everything mounted for a pod: the pinned namespaces and the shm tmpfs. */
  podMounts(id: string): string[] {
    return [...['user', 'net', 'ipc', 'uts'].map((k) => join(this.nsDir(id), k)), join(this.stateDir, id, 'shm')];
  }

  // ---------------------------------------------------------------- records

  get(podId: string): PodEntry | undefined {
    return this.entries.get(podId);
  }

  /** All pods, in creation order. */
  list(): PodEntry[] {
    return [...this.entries.values()].sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
  }

  /** The pod for an exact id or an unambiguous id prefix. */
  resolve(idOrPrefix: string): PodEntry | undefined {
    if (!idOrPrefix) return undefined;
    const exact = this.entries.get(idOrPrefix);
    if (exact) return exact;
    const matches = [...this.entries.values()].filter((e) => e.id.startsWith(idOrPrefix));
    if (matches.length > 1) throw new ServerError(Status.INVALID_ARGUMENT, `pod sandbox id prefix "${idOrPrefix}" is ambiguous (${matches.length} pods)`);
    return matches[0];
  }

  /** Takes a pod (new, or read from disk) into memory, with its name. */
  load(entry: PodEntry): void {
    this.entries.set(entry.id, entry);
    this.names.set(nameKey(entry.metadata), entry.id);
  }

  /** The id holding this name, if any. */
  nameHolder(key: string): string | undefined {
    return this.names.get(key);
  }

  claimName(key: string, id: string): void {
    this.names.set(key, id);
  }

  releaseName(key: string, id: string): void {
    if (this.names.get(key) === id) this.names.delete(key);
  }

  /** Drops everything kept in memory for a pod that is gone. */
  forget(entry: PodEntry): void {
    this.entries.delete(entry.id);
    this.statsCollector.forget(entry.id);
    this.releaseName(nameKey(entry.metadata), entry.id);
  }

  persist(entry: PodEntry): Promise<void> {
    return writeJsonAtomic(join(this.recordDir(entry.id), POD_FILE), toFile(entry));
  }

  async markNotReady(entry: PodEntry): Promise<void> {
    if (entry.state === 'SANDBOX_NOTREADY') return;
    entry.state = 'SANDBOX_NOTREADY';
    await this.persist(entry);
    this.emit(entry, ContainerEventType.CONTAINER_STOPPED_EVENT);
  }

  emit(entry: PodEntry, type: ContainerEventType): void {
    const event: PodSandboxEvent = { podSandboxId: entry.id, type, createdAt: nowNs(), pod: entry };
    this.events.emit('event', event);
  }
}
