// The container store: every fact lives in <root>/containers/<id>/container.json (written
// atomically) or in files conmon writes; the in-memory maps are only a cache rebuilt from them at
// startup. The store owns that cache, the name index, the per-container lock and the paths of a
// container's files; the operations (create.ts, start.ts, stop.ts, exec.ts, status.ts,
// recovery.ts) work through it.
import { parseExact, stringifyExact } from '../util/json-bigint.ts';
import { EventEmitter } from 'node:events';
import { readdirSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ContainerEventType } from '../../../proto/gen/runtime/v1/api.ts';
import type { AppArmorPolicy } from '../confinement/apparmor/index.ts';
import { CdiRegistry, type CdiPolicy } from '../cdi/index.ts';
import { CpuRate } from '../cgroups/cpu-rate.ts';
import { RuntimeHandlers } from '../oci/handlers.ts';
import type { OciRuntime } from '../oci/runtime.ts';
import type { OciSpec } from '../oci/spec.ts';
import { STATE_ENTRIES } from '../state-dir.ts';
import { readJson, replaceFile, writeJsonAtomic } from '../util/atomic-file.ts';
import { nowNs } from '../util/clock.ts';
import { KeyedLock } from '../util/keyed-lock.ts';
import { invalidArgument, notFound } from './errors.ts';
import { ExitWatcher, readExit, type ExitInfo } from './exits.ts';
import { ImageAccountsCache } from './image-accounts.ts';
import { OomKills } from './oom-kills.ts';
import type { ContainerRecord } from './record.ts';
import { rootfsDirs } from './rootfs.ts';
import type { HostFacts } from './spec-builder.ts';
import type { ContainerEvent, ContainerLogger, ContainerManagerOptions, ImageResolver, PodLookup } from './types.ts';

export const CONTAINER_ID = /^[a-f0-9]{64}$/;

/** config.json texts kept in memory (about 10 KB each), the most recently used first to stay. */
const SPEC_TEXTS_KEPT = 256;

export class ContainerStore {
  readonly containersDir: string;
  readonly exitDir: string;
  readonly socketDir: string;
  readonly trashDir: string;
  /** ID-mapped clones of volumes, attached only while the runtime creates a container (idmap-mounts.ts). */
  readonly idmapDir: string;
  /** The OCI runtime of each runtime handler; a container's is the one its pod asked for (runtimeOf). */
  readonly runtimes: RuntimeHandlers;
  readonly pods: PodLookup;
  readonly images: ImageResolver;
  readonly log: ContainerLogger;
  readonly events = new EventEmitter();
  readonly exits: ExitWatcher;
  /** OOM kills the kernel logged, for those conmon could not see (oom-kills.ts). */
  readonly oomKills = new OomKills();
  /** CPU readings for usage_nano_cores, one per live container. */
  readonly cpuRate = new CpuRate();
  /** Containers the runtime already holds in "created" state (adopted after a crash mid-start). */
  readonly runtimeCreated = new Set<string>();
  /** Rootfs known to be mounted (by this process, or checked at recovery). */
  readonly mounted = new Set<string>();
  /** Each image's /etc/passwd and /etc/group, read once (image-accounts.ts). */
  readonly imageAccounts = new ImageAccountsCache();
  /** Running containers whose lost monitor is being looked into, and those already warned about. */
  readonly lostChecks = new Set<string>();
  readonly warnedUnmonitored = new Set<string>();
  /** When a listing last looked at each running container's monitor in /proc (status.ts). */
  readonly monitorCheckedAt = new Map<string, number>();
  /** Facts of this host the spec builder needs; read once at init. */
  host!: HostFacts;
  /** Given by the daemon; otherwise opened at init as the daemon opens it (the default profile loaded where AppArmor is on). */
  apparmor!: AppArmorPolicy;
  readonly cdi: CdiPolicy;
  private readonly records = new Map<string, ContainerRecord>();
  private readonly names = new Map<string, string>();
  private readonly imageLeases = new Map<string, () => void>();
  private readonly lock = new KeyedLock();

  constructor(readonly options: ContainerManagerOptions) {
    this.containersDir = join(options.root, 'containers');
    this.exitDir = join(options.state, STATE_ENTRIES.exits);
    this.socketDir = join(options.state, STATE_ENTRIES.attach);
    this.trashDir = join(options.root, 'containers-trash');
    this.idmapDir = join(options.state, STATE_ENTRIES.idmap);
    this.runtimes = options.runtime instanceof RuntimeHandlers ? options.runtime : RuntimeHandlers.single(options.runtime);
    this.pods = options.pods;
    this.images = options.images;
    this.log = options.log ?? { info: () => {}, warn: () => {} };
    this.exits = new ExitWatcher(this.exitDir);
    if (options.apparmor) this.apparmor = options.apparmor;
    this.cdi = options.cdi ?? { enabled: true, registry: new CdiRegistry(['/etc/cdi', '/var/run/cdi']) };
    this.events.setMaxListeners(0);
  }

  /**
   * The OCI runtime a container runs under: its pod's handler, as its record names it. A record from
   * before handlers, or of a handler no longer configured, falls to the default (said once).
   */
  runtimeOf(record: { id: string; runtime: string }): OciRuntime {
    if (this.runtimes.has(record.runtime)) return this.runtimes.get(record.runtime);
    if (!this.warnedHandlers.has(record.runtime)) {
      this.warnedHandlers.add(record.runtime);
      this.log.warn('a container names a runtime handler this node no longer configures; the default handler manages it', {
        id: record.id,
        handler: record.runtime,
        default: this.runtimes.defaultName,
      });
    }
    return this.runtimes.default;
  }
  private readonly warnedHandlers = new Set<string>();

  /** Runs fn alone among the calls on this container. */
  withLock<T>(id: string, fn: () => Promise<T>): Promise<T> {
    return this.lock.run(id, fn);
  }

  // ---------------------------------------------------------------- paths

  dir(id: string): string {
    return join(this.containersDir, id);
  }
  recordPath(id: string): string {
    return join(this.dir(id), 'container.json');
  }
  bundle(id: string): string {
    return join(this.dir(id), 'bundle');
  }
  persistDir(id: string): string {
    return join(this.dir(id), 'persist');
  }
  paths(id: string) {
    return { dir: this.dir(id), bundle: this.bundle(id), persist: this.persistDir(id), ...rootfsDirs(this.dir(id)) };
  }

  // ---------------------------------------------------------------- records

  /** Writes the record atomically, then makes it the one in memory. */
  async save(record: ContainerRecord): Promise<void> {
    await writeJsonAtomic(this.recordPath(record.id), record);
    this.records.set(record.id, record);
  }

  readRecord(id: string): Promise<ContainerRecord | undefined> {
    return readJson<ContainerRecord>(this.recordPath(id)).catch(() => undefined);
  }

  /** Takes a record read from disk into memory, with its name. */
  load(record: ContainerRecord): void {
    this.records.set(record.id, record);
    this.names.set(record.fullName, record.id);
  }

  /** The record in memory, a half-created one included. */
  record(id: string): ContainerRecord | undefined {
    return this.records.get(id);
  }

  has(id: string): boolean {
    return this.records.has(id);
  }

  get(id: string): ContainerRecord | undefined {
    const r = this.records.get(id);
    return r && r.phase !== 'creating' ? r : undefined;
  }

  /** Exact id, or a unique prefix (as crictl allows). */
  find(id: string): ContainerRecord {
    if (!id) throw invalidArgument('container_id', 'empty');
    const exact = this.get(id);
    if (exact) return exact;
    if (/^[a-f0-9]{3,63}$/.test(id)) {
      const matches = [...this.records.values()].filter((r) => r.id.startsWith(id) && r.phase !== 'creating');
      if (matches.length === 1) return matches[0];
    }
    throw notFound(`container "${id}" not found`);
  }

  /** Every container a client may know of (half-created ones are not). */
  all(): ContainerRecord[] {
    return [...this.records.values()].filter((r) => r.phase !== 'creating');
  }

  listByPod(podId: string): ContainerRecord[] {
    return this.all().filter((r) => r.podSandboxId === podId);
  }

  /** The id holding this full name, if any. */
  nameHolder(fullName: string): string | undefined {
    return this.names.get(fullName);
  }

  claimName(fullName: string, id: string): void {
    this.names.set(fullName, id);
  }

  releaseName(fullName: string, id: string): void {
    if (this.names.get(fullName) === id) this.names.delete(fullName);
  }

  /** Drops everything kept in memory for a container that is gone. */
  forget(id: string, record: ContainerRecord | undefined): void {
    this.records.delete(id);
    this.specTexts.delete(id);
    this.cpuRate.forget(id);
    this.monitorCheckedAt.delete(id);
    this.imageLeases.get(id)?.();
    this.imageLeases.delete(id);
    if (record) this.releaseName(record.fullName, id);
  }

  retainImage(id: string, layerDirs: string[]): void {
    const release = this.images.retain?.(layerDirs);
    if (release) this.imageLeases.set(id, release);
  }

  // ---------------------------------------------------------------- files conmon and runc write

  /** The names in the exit directory now (one readdir for a listing, instead of a stat per container); undefined if unreadable. */
  exitFiles(): Set<string> | undefined {
    try {
      return new Set(readdirSync(this.exitDir));
    } catch {
      return undefined;
    }
  }

  async exitOf(id: string): Promise<ExitInfo | undefined> {
    const exit = await readExit(this.exitDir, this.persistDir(id), id);
    // The kill must be in the container's own cgroup, not merely in one named after it.
    if (!exit || exit.oomKilled || !this.oomKills.struck(id, this.records.get(id)?.cgroupsPath ?? '')) return exit;
    // Recorded where conmon records it, so the answer stays the same after the kernel log has moved on.
    try {
      writeFileSync(join(this.persistDir(id), 'oom'), '');
    } catch {}
    return { ...exit, oomKilled: true };
  }

  async runtimeSpec(id: string): Promise<OciSpec | undefined> {
    const text = await this.runtimeSpecText(id);
    if (text === undefined) return undefined;
    try {
      return parseExact<OciSpec>(text);
    } catch {
      return undefined;
    }
  }

  /** The container's config.json as text: as last written by this daemon, else read from the bundle once. */
  async runtimeSpecText(id: string): Promise<string | undefined> {
    const kept = this.specTexts.get(id);
    if (kept !== undefined) return kept;
    const text = await readFile(join(this.bundle(id), 'config.json'), 'utf8').catch(() => undefined);
    if (text !== undefined) this.keepSpecText(id, text);
    return text;
  }

  /**
   * Writes the container's config.json, by rename but not synced: the container's record, saved and
   * synced after it, is what commits it, and a power cut ends the container anyway (containerd and
   * CRI-O write bundles unsynced too). The text stays in memory for verbose status.
   */
  async saveRuntimeSpec(id: string, spec: OciSpec): Promise<void> {
    const text = stringifyExact(spec);
    this.specTexts.delete(id);
    await replaceFile(join(this.bundle(id), 'config.json'), text);
    this.keepSpecText(id, text);
  }

  /** The most recently used specs, a bounded number (a verbose status of another reads its file). */
  private keepSpecText(id: string, text: string): void {
    this.specTexts.delete(id);
    this.specTexts.set(id, text);
    if (this.specTexts.size > SPEC_TEXTS_KEPT) this.specTexts.delete(this.specTexts.keys().next().value!);
  }
  private readonly specTexts = new Map<string, string>();

  emit(record: ContainerRecord, type: ContainerEventType): void {
    const event: ContainerEvent = { containerId: record.id, podSandboxId: record.podSandboxId, type, createdAt: nowNs(), record };
    this.events.emit('event', event);
  }
}
