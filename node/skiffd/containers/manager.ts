// The container subsystem: lifecycle (create/start/stop/remove), status, exec, logs and restart
// recovery. Every fact lives in <root>/containers/<id>/container.json (written atomically) or in
// files conmon writes; the in-memory map is only a cache rebuilt from them at startup.
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { constants as fsConstants } from 'node:fs';
import { access, lstat, mkdir, open, readdir, readFile, rename, rm, realpath } from 'node:fs/promises';
import { dirname, isAbsolute, join, normalize } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ContainerEventType,
  ContainerState,
  type ContainerConfig,
  type CreateContainerRequest,
  type LinuxContainerResources,
  type Mount,
  type PodSandboxConfig,
} from '../../../proto/gen/runtime/v1/api.ts';
import { CpuRate } from '../cgroups/cpu-rate.ts';
import type { OciRuntime } from '../oci/runtime.ts';
import { OciRuntimeError } from '../oci/runtime.ts';
import type { OciSpec } from '../oci/spec.ts';
import { readJson, writeJsonAtomic } from '../util/atomic-file.ts';
import { alreadyExists, deadlineExceeded, failedPrecondition, internal, invalidArgument, notFound, ServerError } from './errors.ts';
import { ExitWatcher, readExit, type ExitInfo } from './exits.ts';
import { hostDevices, readHostFacts, resolveDevices } from './host.ts';
import { KeyedLock } from '../util/keyed-lock.ts';
import { nowNs } from '../util/clock.ts';
import { mountToJson, resourcesFromJson, resourcesToJson, type ContainerRecord } from './record.ts';
import { isMountPoint, mountRootfs, readImageFile, rootfsDirs, unmountRootfs } from './rootfs.ts';
import { catchesSignal, killIfConmon, monitorAlive, processStartTime, untilProgramRuns } from './process.ts';
import { criSignalFromNumber } from './signals.ts';
import { buildSpec, seccompProfilePath, toOciResources, type HostFacts, type ImageConfigView, type PodView } from './spec-builder.ts';
import type { PodSandboxRecord } from '../pods/types.ts';

/** What containers need to know about an image. */
export interface ResolvedImage {
  /** Image id (`sha256:...`), reported as image_id. */
  id: string;
  /** Digested reference (image_ref). */
  ref: string;
  /** Unpacked layer directories, base layer first. */
  layers: string[];
  config: ImageConfigView;
}

export interface ImageResolver {
  resolve(image: string): Promise<ResolvedImage | undefined> | ResolvedImage | undefined;
  /** Keeps these layer directories from garbage collection while a container has them mounted; returns the release. */
  retain?(layerDirs: string[]): () => void;
}

export interface PodLookup {
  get(podId: string): PodSandboxRecord | undefined;
  withLock?<T>(podId: string, fn: () => Promise<T>): Promise<T>;
}

export interface ContainerLogger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
}

export interface ContainerManagerOptions {
  /** Persistent root (records, upper dirs): `<root>/containers/<id>`. */
  root: string;
  /** Runtime state (exit files, attach sockets). */
  state: string;
  runtime: OciRuntime;
  pods: PodLookup;
  images: ImageResolver;
  log?: ContainerLogger;
  /** cgroup parent for pods that name none. */
  defaultCgroupParent?: string;
  /** Overrides of facts read from the host (tests). */
  host?: Partial<HostFacts>;
}

export interface ContainerEvent {
  containerId: string;
  podSandboxId: string;
  type: ContainerEventType;
  /** ns since epoch */
  createdAt: bigint;
}

/** A container as the RPCs report it: the record plus what the exit file says. */
export interface ContainerView {
  record: ContainerRecord;
  state: ContainerState;
  exit?: ExitInfo;
}

const MAX_EXEC_OUTPUT = 16 * 1024 * 1024;
const KILL_WAIT_MS = 10_000;
/** How long a stop waits for the runtime's init to exec the container's program. */
const EXEC_WAIT_MS = 2_000;
/** How long after a dropped stop signal the program may still install a handler and get it again. */
const HANDLER_WAIT_MS = 2_000;
const REDELIVERY_POLL_MS = 20;
const REOPEN_WAIT_MS = 2_000;
const CONTAINER_ID = /^[a-f0-9]{64}$/;

export class ContainerManager {
  readonly containersDir: string;
  readonly exitDir: string;
  readonly socketDir: string;
  private readonly trashDir: string;
  readonly runtime: OciRuntime;
  readonly events = new EventEmitter();
  /** CPU readings for usage_nano_cores, one per live container. */
  readonly cpuRate = new CpuRate();
  private readonly records = new Map<string, ContainerRecord>();
  private readonly names = new Map<string, string>();
  private readonly imageLeases = new Map<string, () => void>();
  /** Containers the runtime already holds in "created" state (adopted after a crash mid-start). */
  private readonly runtimeCreated = new Set<string>();
  private readonly lostChecks = new Set<string>();
  /** Rootfs known to be mounted (by this process, or checked at recovery). */
  private readonly mounted = new Set<string>();
  private readonly warnedUnmonitored = new Set<string>();
  private readonly lock = new KeyedLock();
  private readonly exits: ExitWatcher;
  private readonly pods: PodLookup;
  private readonly images: ImageResolver;
  private readonly log: ContainerLogger;
  private host!: HostFacts;
  private readonly options: ContainerManagerOptions;

  constructor(options: ContainerManagerOptions) {
    this.options = options;
    this.containersDir = join(options.root, 'containers');
    this.exitDir = join(options.state, 'exits');
    this.socketDir = join(options.state, 'attach');
    this.trashDir = join(options.root, 'containers-trash');
    this.runtime = options.runtime;
    this.pods = options.pods;
    this.images = options.images;
    this.log = options.log ?? { info: () => {}, warn: () => {} };
    this.exits = new ExitWatcher(this.exitDir);
    this.events.setMaxListeners(0);
  }

  /** Loads every record, reconciles it with the runtime and conmon's exit files, starts watching exits. */
  async init(): Promise<void> {
    this.host = { ...readHostFacts(this.options.defaultCgroupParent ?? '/skiffd'), ...this.options.host };
    await mkdir(this.containersDir, { recursive: true, mode: 0o711 });
    await mkdir(this.socketDir, { recursive: true });
    // Watch first, so an exit during recovery is not missed.
    await this.exits.start();
    this.exits.on('exit', (id: string) => void this.observeExit(id));
    // A few at a time: each may run `runc state`, `runc delete` or a mount.
    const ids = (await readdir(this.containersDir)).filter((name) => CONTAINER_ID.test(name));
    const workers = Array.from({ length: Math.min(8, ids.length) }, async () => {
      for (let id = ids.shift(); id !== undefined; id = ids.shift()) {
        const current = id;
        await this.lock.run(current, () => this.recover(current)).catch((err) => this.log.warn('container recovery failed', { id: current, err: String(err) }));
      }
    });
    await Promise.all(workers);
    // Files of containers removed before a crash: the trash, and exit files and sockets nobody owns.
    await rm(this.trashDir, { recursive: true, force: true });
    await mkdir(this.trashDir, { recursive: true, mode: 0o700 });
    for (const dir of [this.exitDir, this.socketDir]) {
      for (const name of await readdir(dir).catch(() => [] as string[])) {
        if (CONTAINER_ID.test(name) && !this.records.has(name)) await rm(join(dir, name), { recursive: true, force: true });
      }
    }
  }

  async close(): Promise<void> {
    this.exits.close();
    this.events.removeAllListeners();
  }

  private dir(id: string): string {
    return join(this.containersDir, id);
  }
  private recordPath(id: string): string {
    return join(this.dir(id), 'container.json');
  }
  private bundle(id: string): string {
    return join(this.dir(id), 'bundle');
  }
  private persistDir(id: string): string {
    return join(this.dir(id), 'persist');
  }

  private async save(record: ContainerRecord): Promise<void> {
    await writeJsonAtomic(this.recordPath(record.id), record);
    this.records.set(record.id, record);
  }

  private emit(record: ContainerRecord, type: ContainerEventType): void {
    const event: ContainerEvent = { containerId: record.id, podSandboxId: record.podSandboxId, type, createdAt: nowNs() };
    this.events.emit('event', event);
  }

  // ---------------------------------------------------------------- recovery

  private async recover(id: string): Promise<void> {
    const record = await readJson<ContainerRecord>(this.recordPath(id)).catch(() => undefined);
    if (!record || record.phase === 'creating') {
      // A create that never returned: the client never learned the id, so undo it.
      this.log.warn('cleaning up a half-created container', { id });
      await this.destroy(id, record);
      return;
    }
    this.records.set(id, record);
    this.names.set(record.fullName, id);
    this.retainImage(id, record.lowerDirs);
    if (record.phase === 'exited') {
      // The exit was recorded, but the crash may have come before the runtime state and mount went.
      if (!record.released) await this.applyExit(record, { exitCode: record.exitCode ?? 0, finishedAt: record.finishedAt ?? String(nowNs()), oomKilled: false });
      return;
    }
    const exit = await this.exitOf(id);
    if (exit) {
      await this.applyExit(record, exit);
      return;
    }
    const state = await this.runtime.state(id).catch(() => undefined);
    if (record.phase === 'created') {
      // A StartContainer that crashed after conmon created the container: adopt it, start skips the create.
      if (state?.status === 'created') this.runtimeCreated.add(id);
      else if (state) {
        // Not in a state we can start from: drop it, and the exit file its monitor then writes.
        await this.runtime.delete(id, true);
        await this.exits.waitFor(id, 2000);
        await rm(join(this.exitDir, id), { force: true });
      }
      await this.ensureMounted(record).catch((err) => this.log.warn('cannot remount rootfs', { id, err: String(err) }));
      return;
    }
    if (state?.status === 'created') {
      // Crashed between recording the start and `runc start`: it never ran, start it again later.
      this.runtimeCreated.add(id);
      await this.save({ ...record, phase: 'created', startedAt: undefined });
      await this.ensureMounted(record).catch((err) => this.log.warn('cannot remount rootfs', { id, err: String(err) }));
      return;
    }
    if (!state || state.status === 'stopped') {
      if (state && (await this.exits.waitFor(id, 2000))) {
        // conmon was about to write the exit file.
        const late = await this.exitOf(id);
        if (late) {
          await this.applyExit(record, late);
          return;
        }
      }
      // Nobody recorded how it ended (monitor killed, or a reboot wiped the runtime state).
      await this.applyExit(record, { exitCode: 255, finishedAt: String(nowNs()), oomKilled: false }, 'the container ended while its monitor was not watching; its exit code is unknown');
      return;
    }
    await this.ensureMounted(record).catch((err) => this.log.warn('cannot remount rootfs', { id, err: String(err) }));
  }

  /** Keeps the rootfs mounted for a live container (a no-op unless something unmounted it). */
  private async ensureMounted(record: ContainerRecord): Promise<void> {
    if (this.mounted.has(record.id)) return;
    const dirs = rootfsDirs(this.dir(record.id));
    await mountRootfs(dirs, record.lowerDirs);
    this.mounted.add(record.id);
  }

  private retainImage(id: string, layerDirs: string[]): void {
    const release = this.images.retain?.(layerDirs);
    if (release) this.imageLeases.set(id, release);
  }

  private exitOf(id: string): Promise<ExitInfo | undefined> {
    return readExit(this.exitDir, this.persistDir(id), id);
  }

  /**
   * Records how a container ended and lets go of what only a live container needs (runtime state,
   * rootfs mount), in one atomic record write. Idempotent: a crash half-way is finished on recovery.
   */
  private async applyExit(record: ContainerRecord, exit: ExitInfo, message?: string): Promise<ContainerRecord> {
    if (record.phase === 'exited' && record.released) return record;
    await this.runtime.delete(record.id, true).catch((err) => this.log.warn('runtime delete failed', { id: record.id, err: String(err) }));
    this.runtimeCreated.delete(record.id);
    await unmountRootfs(rootfsDirs(this.dir(record.id)));
    this.mounted.delete(record.id);
    const already = record.phase === 'exited';
    const reason = exit.oomKilled ? 'OOMKilled' : exit.exitCode === 0 ? 'Completed' : 'Error';
    const next: ContainerRecord = already
      ? { ...record, released: true }
      : { ...record, phase: 'exited', exitCode: exit.exitCode, finishedAt: exit.finishedAt, reason, message: message ?? record.message, released: true };
    await this.save(next);
    if (!already) this.emit(next, ContainerEventType.CONTAINER_STOPPED_EVENT);
    return next;
  }

  private async observeExit(id: string): Promise<void> {
    if (!this.records.has(id)) return;
    await this.lock.run(id, async () => {
      const record = this.records.get(id);
      if (!record || record.phase === 'exited' || record.phase === 'creating') return;
      const exit = await this.exitOf(id);
      if (exit) await this.applyExit(record, exit);
    }).catch((err) => this.log.warn('recording a container exit failed', { id, err: String(err) }));
  }

  // ---------------------------------------------------------------- queries

  get(id: string): ContainerRecord | undefined {
    const r = this.records.get(id);
    return r && r.phase !== 'creating' ? r : undefined;
  }

  /** Exact id, or a unique prefix (as crictl allows). */
  private find(id: string): ContainerRecord {
    if (!id) throw invalidArgument('container_id', 'empty');
    const exact = this.get(id);
    if (exact) return exact;
    if (/^[a-f0-9]{3,63}$/.test(id)) {
      const matches = [...this.records.values()].filter((r) => r.id.startsWith(id) && r.phase !== 'creating');
      if (matches.length === 1) return matches[0];
    }
    throw notFound(`container "${id}" not found`);
  }

  async view(record: ContainerRecord): Promise<ContainerView> {
    if (record.phase === 'exited') {
      return { record, state: ContainerState.CONTAINER_EXITED };
    }
    const exit = await this.exitOf(record.id);
    if (exit) {
      const reason = exit.oomKilled ? 'OOMKilled' : exit.exitCode === 0 ? 'Completed' : 'Error';
      return { record: { ...record, phase: 'exited', exitCode: exit.exitCode, finishedAt: exit.finishedAt, reason }, state: ContainerState.CONTAINER_EXITED, exit };
    }
    if (record.phase === 'created') return { record, state: ContainerState.CONTAINER_CREATED };
    if (record.conmonPid && !this.lostChecks.has(record.id) && !(await monitorAlive(record.conmonPid))) {
      // No monitor means no exit file will ever come: ask the runtime (under the lock, off this call).
      this.lostChecks.add(record.id);
      void this.lock
        .run(record.id, () => this.checkLost(record.id))
        .catch((err) => this.log.warn('checking a container without monitor failed', { id: record.id, err: String(err) }))
        .finally(() => this.lostChecks.delete(record.id));
    }
    return { record, state: ContainerState.CONTAINER_RUNNING };
  }

  private async checkLost(id: string): Promise<void> {
    const record = this.records.get(id);
    if (!record || record.phase !== 'running') return;
    const exit = await this.exitOf(id);
    if (exit) {
      await this.applyExit(record, exit);
      return;
    }
    const state = await this.runtime.state(id).catch(() => undefined);
    if (!state || state.status === 'stopped') {
      await this.applyExit(record, { exitCode: 255, finishedAt: String(nowNs()), oomKilled: false }, 'its monitor (conmon) died, so its exit code is unknown');
    } else if (!this.warnedUnmonitored.has(id)) {
      this.warnedUnmonitored.add(id);
      this.log.warn('container runs without its monitor (conmon died): its exit will not be recorded', { id });
    }
  }

  async status(id: string): Promise<ContainerView> {
    return this.view(this.find(id));
  }

  async list(): Promise<ContainerView[]> {
    const out: ContainerView[] = [];
    for (const r of this.records.values()) if (r.phase !== 'creating') out.push(await this.view(r));
    return out;
  }

  listByPod(podId: string): ContainerRecord[] {
    return [...this.records.values()].filter((r) => r.podSandboxId === podId && r.phase !== 'creating');
  }

  async runtimeSpec(id: string): Promise<OciSpec | undefined> {
    return readJson<OciSpec>(join(this.bundle(id), 'config.json')).catch(() => undefined);
  }

  paths(id: string) {
    return { dir: this.dir(id), bundle: this.bundle(id), persist: this.persistDir(id), ...rootfsDirs(this.dir(id)) };
  }

  // ---------------------------------------------------------------- create

  async create(request: CreateContainerRequest): Promise<string> {
    const config = request.config;
    if (!request.podSandboxId) throw invalidArgument('pod_sandbox_id', 'empty');
    if (!config) throw invalidArgument('config', 'missing');
    if (!config.metadata?.name) throw invalidArgument('config.metadata.name', 'empty');
    const run = () => this.createInPod(request.podSandboxId, config, request.sandboxConfig);
    return this.pods.withLock ? this.pods.withLock(request.podSandboxId, run) : run();
  }

  private async createInPod(podId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig | undefined): Promise<string> {
    const pod = this.pods.get(podId);
    if (!pod) throw notFound(`pod sandbox "${podId}" not found`);
    if (pod.state !== 'SANDBOX_READY') throw failedPrecondition(`pod sandbox "${podId}" is not ready (state ${pod.state})`);
    const imageName = config.image?.image ?? '';
    if (!imageName) throw invalidArgument('config.image.image', 'empty');
    const image = await this.images.resolve(imageName);
    if (!image) throw notFound(`image "${imageName}" not found: pull it first`);
    const meta = pod.metadata;
    const fullName = [config.metadata!.name, meta.name, meta.namespace, meta.uid, String(config.metadata!.attempt)].join('_');
    const taken = this.names.get(fullName);
    if (taken) throw alreadyExists(`container name "${fullName}" is already in use by container ${taken}`);
    if (config.logPath && (isAbsolute(config.logPath) || normalize(config.logPath).startsWith('..'))) {
      throw invalidArgument('config.log_path', `"${config.logPath}" must be relative to the pod's log_directory`);
    }
    // Host-side lookups that can fail on bad input, before anything is created.
    const mounts = await this.resolveMounts(config.mounts);
    const devices = resolveDevices(config.devices);
    const privileged = config.linux?.securityContext?.privileged ?? false;
    const targetId = config.linux?.securityContext?.namespaceOptions?.targetId;
    let targetPidNamespace: string | undefined;
    if (targetId) {
      const target = this.get(targetId);
      const running = target && target.podSandboxId === podId && target.pid && (await this.view(target)).state === ContainerState.CONTAINER_RUNNING;
      if (!running) throw invalidArgument('linux.security_context.namespace_options.target_id', `no running container "${targetId}" in pod ${podId}`);
      targetPidNamespace = `/proc/${target!.pid}/ns/pid`;
    }

    const seccompProfile = await loadSeccompProfile(config);

    const id = randomBytes(32).toString('hex');
    const dir = this.dir(id);
    const logPath = pod.logDirectory && config.logPath ? join(pod.logDirectory, config.logPath) : '';
    const record: ContainerRecord = {
      version: 1,
      id,
      podSandboxId: podId,
      fullName,
      metadata: { name: config.metadata!.name, attempt: config.metadata!.attempt },
      image: {
        image: imageName,
        annotations: { ...(config.image?.annotations ?? {}) },
        userSpecifiedImage: config.image?.userSpecifiedImage ?? '',
        runtimeHandler: config.image?.runtimeHandler ?? '',
      },
      imageRef: image.ref,
      imageId: image.id,
      labels: { ...config.labels },
      annotations: { ...config.annotations },
      logPath,
      conmonLogPath: logPath || join(dir, 'console.log'),
      phase: 'creating',
      createdAt: String(nowNs()),
      mounts: config.mounts.map(mountToJson),
      resources: resourcesToJson(config.linux?.resources),
      user: { uid: 0, gid: 0, additionalGids: [] },
      stopSignal: 15,
      stopSignalName: 'SIGTERM',
      criStopSignal: 0,
      lowerDirs: image.layers,
      cgroupsPath: '',
      tty: config.tty,
      stdin: config.stdin,
      stdinOnce: config.stdinOnce,
      runtime: this.runtime.name,
    };
    this.names.set(fullName, id);
    this.retainImage(id, image.layers);
    return this.lock.run(id, async () => {
      let mounting: Promise<void> | undefined;
      try {
        // No record until the end: a directory without one is a create that never finished, and
        // recovery removes it (unmounting first).
        await mkdir(dir, { recursive: true, mode: 0o700 });
        const dirs = rootfsDirs(dir);
        mounting = mountRootfs(dirs, image.layers, true);
        mounting.catch(() => {}); // awaited below; a failure before that is not unhandled
        // A single layer is its own merged view: the spec is built from it while the mount is made.
        if (image.layers.length > 1) await mounting;
        const view = image.layers.length === 1 ? image.layers[0] : dirs.merged;
        const [passwd, group] = await Promise.all([readImageFile(view, 'etc/passwd'), readImageFile(view, 'etc/group')]);
        const built = buildSpec({
          id,
          config,
          sandboxConfig,
          pod: podView(pod),
          image: image.config,
          rootfsPath: dirs.merged,
          passwd,
          group,
          mounts,
          devices,
          hostDevices: privileged ? hostDevices() : undefined,
          targetPidNamespace,
          seccompProfile,
          host: this.host,
        });
        await Promise.all([mkdir(this.bundle(id), { recursive: true }), mkdir(this.persistDir(id), { recursive: true }), mkdir(dirname(record.conmonLogPath), { recursive: true })]);
        await writeJsonAtomic(join(this.bundle(id), 'config.json'), built.spec);
        const pidNs = built.spec.linux.namespaces.find((n) => n.type === 'pid');
        const done: ContainerRecord = {
          ...record,
          phase: 'created',
          user: { uid: built.user.uid, gid: built.user.gid, additionalGids: built.user.additionalGids },
          stopSignal: built.stopSignal,
          stopSignalName: built.stopSignalName,
          criStopSignal: config.stopSignal || criSignalFromNumber(built.stopSignal),
          cgroupsPath: built.spec.linux.cgroupsPath ?? '',
          killAll: !pidNs || !!pidNs.path,
        };
        // The record does not wait for the mount: recovery mounts the rootfs of a created container
        // that lacks it. The call still answers only once the rootfs is mounted.
        await this.save(done);
        await mounting;
        this.mounted.add(id);
        this.emit(done, ContainerEventType.CONTAINER_CREATED_EVENT);
        return id;
      } catch (err) {
        // The mount may still be under way; the cleanup must come after it.
        await mounting?.catch(() => {});
        await this.destroy(id, record).catch((e) => this.log.warn('cleanup after a failed create failed', { id, err: String(e) }));
        this.names.delete(fullName);
        if (err instanceof ServerError) throw err;
        if (err instanceof OciRuntimeError) throw internal(`creating container ${config.metadata!.name}: ${err.message}`);
        throw internal(`creating container ${config.metadata!.name}: ${(err as Error).message}`);
      }
    });
  }

  private async resolveMounts(mounts: Mount[]): Promise<Mount[]> {
    return Promise.all(
      mounts.map(async (m, i) => {
        if (m.image?.image) return m;
        if (!m.hostPath) throw invalidArgument(`config.mounts[${i}].host_path`, 'empty');
        try {
          return { ...m, hostPath: await realpath(m.hostPath) };
        } catch {
          throw invalidArgument(`config.mounts[${i}].host_path`, `${m.hostPath} does not exist`);
        }
      }),
    );
  }

  /** Removes everything a container left: runtime state, monitor, mount, directories. */
  private async destroy(id: string, record: ContainerRecord | undefined): Promise<void> {
    if (!record?.released) {
      const runtimeKnowsIt = !record || record.phase !== 'created' || this.runtimeCreated.has(id);
      if (runtimeKnowsIt) await this.runtime.delete(id, true).catch((err) => this.log.warn('runtime delete failed', { id, err: String(err) }));
      if (record?.conmonPid) killIfConmon(record.conmonPid);
      await unmountRootfs(rootfsDirs(this.dir(id)));
    }
    this.mounted.delete(id);
    this.runtimeCreated.delete(id);
    // One rename takes the container out of the store (recovery never sees it again); deleting
    // its files, which can be many in the writable layer, happens off the call.
    const trash = join(this.trashDir, `${id}-${randomBytes(4).toString('hex')}`);
    await rename(this.dir(id), trash).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
    void Promise.all([
      rm(trash, { recursive: true, force: true }),
      rm(join(this.exitDir, id), { force: true }),
      rm(join(this.socketDir, id), { force: true, recursive: true }),
    ]).catch((err) => this.log.warn('deleting a removed container\'s files failed', { id, err: String(err) }));
    this.records.delete(id);
    this.cpuRate.forget(id);
    this.imageLeases.get(id)?.();
    this.imageLeases.delete(id);
    if (record) {
      if (this.names.get(record.fullName) === id) this.names.delete(record.fullName);
    }
  }

  // ---------------------------------------------------------------- start / stop / remove

  async start(id: string): Promise<void> {
    const found = this.find(id);
    await this.lock.run(found.id, async () => {
      const record = this.find(found.id);
      const view = await this.view(record);
      if (view.state !== ContainerState.CONTAINER_CREATED) {
        throw failedPrecondition(`container ${record.id} is ${ContainerState[view.state]}, not CONTAINER_CREATED`);
      }
      let running: ContainerRecord = record;
      try {
        await this.ensureMounted(record);
        if (!this.runtimeCreated.has(record.id)) {
          // A stale exit file would make the new run look finished.
          await rm(join(this.exitDir, record.id), { force: true });
          const created = await this.runtime.create({
            id: record.id,
            bundle: this.bundle(record.id),
            logPath: record.conmonLogPath,
            exitDir: this.exitDir,
            persistDir: this.persistDir(record.id),
            socketDir: this.socketDir,
            tty: record.tty,
            stdin: record.stdin,
            stdinOnce: record.stdinOnce,
          });
          running = { ...record, pid: created.pid, conmonPid: created.conmonPid };
          this.runtimeCreated.add(record.id);
        } else {
          const state = await this.runtime.state(record.id);
          running = { ...record, pid: state?.pid || record.pid };
        }
        // Recorded before `runc start`: after a crash, `runc state` tells whether the start happened.
        running = { ...running, phase: 'running', startedAt: String(nowNs()), pidStartTime: running.pid ? await processStartTime(running.pid) : undefined };
        await this.save(running);
        await this.runtime.start(record.id);
        this.runtimeCreated.delete(record.id);
      } catch (err) {
        // Report it as exited with the runtime's message; the kubelet removes it and tries anew.
        await this.runtime.delete(record.id, true).catch(() => {});
        this.runtimeCreated.delete(record.id);
        const exit = (await this.exits.waitFor(record.id, running.conmonPid ? 2000 : 0)) ? await this.exitOf(record.id) : undefined;
        const failed: ContainerRecord = {
          ...running,
          phase: 'exited',
          exitCode: exit?.exitCode ?? 128,
          startedAt: running.startedAt ?? String(nowNs()),
          finishedAt: exit?.finishedAt ?? String(nowNs()),
          reason: 'StartError',
          message: (err as Error).message,
        };
        await this.save(failed);
        this.emit(failed, ContainerEventType.CONTAINER_STOPPED_EVENT);
        await this.applyExit(failed, { exitCode: failed.exitCode!, finishedAt: failed.finishedAt!, oomKilled: false });
        throw internal(`starting container ${record.id}: ${(err as Error).message}`);
      }
      this.emit(running, ContainerEventType.CONTAINER_STARTED_EVENT);
    });
  }

  /** Stop signal, then SIGKILL after timeoutSeconds. Stopping a stopped container is fine. */
  async stop(id: string, timeoutSeconds: number): Promise<void> {
    const found = this.find(id);
    await this.lock.run(found.id, () => this.stopLocked(found.id, timeoutSeconds));
  }

  private async stopLocked(id: string, timeoutSeconds: number): Promise<void> {
    const record = this.records.get(id);
    // Never started: nothing runs (the runtime does not know it yet); it stays CREATED, as in containerd.
    if (!record || record.phase === 'exited' || record.phase === 'creating' || record.phase === 'created') return;
    const view = await this.view(record);
    if (view.exit) {
      await this.applyExit(record, view.exit);
      return;
    }
    if (timeoutSeconds > 0) {
      const redelivery = await this.sendStopSignal(record);
      const exited = await this.exits.waitFor(id, timeoutSeconds * 1000);
      redelivery.cancel();
      if (exited) return this.finishStop(record);
    }
    if (record.killAll) await this.runtime.kill(id, 9, true);
    else await this.signalInit(record, 9);
    if (await this.exits.waitFor(id, KILL_WAIT_MS)) return this.finishStop(record);
    // The runtime may have lost it (state says stopped) without conmon telling us.
    const state = await this.runtime.state(id).catch(() => undefined);
    if (!state || state.status === 'stopped') {
      await this.applyExit(record, { exitCode: 137, finishedAt: String(nowNs()), oomKilled: false }, 'stopped, but its monitor did not report an exit code');
      return;
    }
    throw deadlineExceeded(`container ${id} did not exit ${KILL_WAIT_MS / 1000}s after SIGKILL`);
  }

  /**
   * Sends the stop signal so the container's program gets it. A stop right after a start would
   * otherwise race the program's own start-up: before execve the runtime's init takes the signal,
   * and before the program installs its handler a namespace init drops it. So the signal waits for
   * the execve, and is sent once more if the program installs a handler within a short window.
   */
  private async sendStopSignal(record: ContainerRecord): Promise<{ cancel(): void }> {
    const signal = record.stopSignal;
    const pid = record.pid;
    if (!pid || !record.pidStartTime || (await processStartTime(pid)) !== record.pidStartTime) {
      await this.signalInit(record, signal);
      return { cancel() {} };
    }
    await untilProgramRuns(pid, this.runtime.name, EXEC_WAIT_MS);
    const caught = await catchesSignal(pid, signal);
    await this.signalInit(record, signal);
    if (caught) return { cancel() {} };
    let cancelled = false;
    const deadline = Date.now() + HANDLER_WAIT_MS;
    void (async () => {
      while (!cancelled && Date.now() < deadline) {
        await sleep(REDELIVERY_POLL_MS);
        if (cancelled || (await processStartTime(pid)) !== record.pidStartTime) return;
        if (await catchesSignal(pid, signal)) {
          if (!cancelled) await this.signalInit(record, signal);
          return;
        }
      }
    })().catch((err) => this.log.warn('re-sending the stop signal failed', { id: record.id, err: String(err) }));
    return {
      cancel() {
        cancelled = true;
      },
    };
  }

  /**
   * Signals the container's init directly when it is provably the same process (pid and start time
   * as recorded at start, the check `runc kill` makes too), saving a runtime exec; else asks the runtime.
   */
  private async signalInit(record: ContainerRecord, signal: number): Promise<void> {
    if (record.pid && record.pidStartTime) {
      const now = await processStartTime(record.pid);
      if (now !== record.pidStartTime) return; // already gone
      try {
        process.kill(record.pid, signal);
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ESRCH') return;
      }
    }
    await this.runtime.kill(record.id, signal, false);
  }

  private async finishStop(record: ContainerRecord): Promise<void> {
    const exit = await this.exitOf(record.id);
    if (exit) await this.applyExit(this.records.get(record.id) ?? record, exit);
  }

  /** Kills a live container and deletes everything of it. Unknown ids are fine (idempotent). */
  async remove(id: string): Promise<void> {
    let record: ContainerRecord;
    try {
      record = this.find(id);
    } catch (err) {
      if (err instanceof ServerError && err.code === 5 /* NOT_FOUND */) return;
      throw err;
    }
    await this.lock.run(record.id, async () => {
      const current = this.records.get(record.id);
      if (!current) return;
      await this.stopLocked(record.id, 0);
      await this.destroy(record.id, this.records.get(record.id) ?? current);
      this.emit(current, ContainerEventType.CONTAINER_DELETED_EVENT);
    });
  }

  async stopAllInPod(podId: string, timeoutSeconds: number): Promise<void> {
    await Promise.all(this.listByPod(podId).map((r) => this.stop(r.id, timeoutSeconds)));
  }

  async removeAllInPod(podId: string): Promise<void> {
    await Promise.all(this.listByPod(podId).map((r) => this.remove(r.id)));
  }

  // ---------------------------------------------------------------- exec, logs, resources

  async execSync(id: string, cmd: string[], timeoutSeconds: number): Promise<{ stdout: Buffer; stderr: Buffer; exitCode: number }> {
    const record = this.find(id);
    if (cmd.length === 0) throw invalidArgument('cmd', 'empty');
    const view = await this.view(record);
    if (view.state !== ContainerState.CONTAINER_RUNNING) throw failedPrecondition(`container ${record.id} is not running (${ContainerState[view.state]})`);
    const result = await this.runtime.execSync(record.id, { args: cmd, timeoutMs: timeoutSeconds > 0 ? timeoutSeconds * 1000 : 0, maxOutputBytes: MAX_EXEC_OUTPUT });
    if (result.timedOut) throw deadlineExceeded(`command ${JSON.stringify(cmd)} in container ${record.id} timed out after ${timeoutSeconds}s`);
    return { stdout: result.stdout, stderr: result.stderr, exitCode: result.exitCode };
  }

  /** Asks conmon to reopen the log file (after the kubelet rotated it). */
  async reopenLog(id: string): Promise<void> {
    const record = this.find(id);
    const view = await this.view(record);
    if (view.state !== ContainerState.CONTAINER_RUNNING) throw failedPrecondition(`container ${record.id} is not running: no log to reopen`);
    let handle;
    try {
      // Non-blocking: a blocking open of a FIFO with no reader would hang forever.
      handle = await open(join(this.bundle(record.id), 'ctl'), fsConstants.O_WRONLY | fsConstants.O_NONBLOCK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENXIO' || code === 'ENOENT') throw failedPrecondition(`the monitor (conmon) of container ${record.id} is not running; cannot reopen its log`);
      throw err;
    }
    // Rotation renames the file away before the call; reopening a file still in place changes nothing visible.
    const rotated = !(await exists(record.conmonLogPath));
    try {
      await handle.write('2 0 0\n');
    } finally {
      await handle.close();
    }
    if (!rotated) return;
    // conmon reopens on its own time; the call answers once the new file is there, as the
    // kubelet's log rotation expects.
    const deadline = Date.now() + REOPEN_WAIT_MS;
    while (!(await exists(record.conmonLogPath))) {
      if (Date.now() >= deadline) throw internal(`the monitor (conmon) of container ${record.id} did not reopen ${record.conmonLogPath} within ${REOPEN_WAIT_MS / 1000}s`);
      await sleep(2);
    }
  }

  async updateResources(id: string, resources: LinuxContainerResources | undefined): Promise<void> {
    const found = this.find(id);
    if (!resources) throw invalidArgument('linux', 'missing');
    await this.lock.run(found.id, async () => {
      const record = this.find(found.id);
      const view = await this.view(record);
      if (view.state === ContainerState.CONTAINER_EXITED) throw failedPrecondition(`container ${record.id} has exited`);
      const oci = toOciResources(resources, this.host);
      // A container not started yet is not in the runtime: its config.json is all there is to change.
      const live = view.state === ContainerState.CONTAINER_RUNNING || this.runtimeCreated.has(record.id);
      if (live) {
        await this.runtime.update(record.id, oci).catch((err) => {
          throw internal(`updating resources of container ${record.id}: ${(err as Error).message}`);
        });
      }
      // Keep config.json in step, so a later `runc update` or reader sees the same limits.
      const spec = await this.runtimeSpec(record.id);
      if (spec) {
        spec.linux.resources = { ...spec.linux.resources, ...oci, devices: spec.linux.resources?.devices };
        await writeJsonAtomic(join(this.bundle(record.id), 'config.json'), spec);
      }
      const merged = { ...resources, oomScoreAdj: resourcesFromJson(record.resources).oomScoreAdj };
      await this.save({ ...this.records.get(record.id)!, resources: resourcesToJson(merged) });
    });
  }

  /** Bytes and inodes in the writable layer. */
  async writableLayerUsage(id: string): Promise<{ bytes: bigint; inodes: bigint }> {
    return du(rootfsDirs(this.dir(id)).upper);
  }

  /** Pending exit waits (leak checks). */
  pendingExitWaits(): number {
    return this.exits.pendingWaits();
  }

  hostFacts(): HostFacts {
    return this.host;
  }
}

function podView(pod: PodSandboxRecord): PodView {
  return {
    id: pod.id,
    hostname: pod.hostname,
    namespaces: {
      ...pod.namespaces,
      // The record's pid path exists only for POD pid mode; CONTAINER mode gets a fresh namespace.
      pid: pod.pidMode === 'POD' ? pod.namespaces.pid : undefined,
    },
    cgroupParent: pod.cgroupParent,
    resolvConfPath: pod.resolvConfPath || undefined,
    hostnamePath: pod.hostnamePath || undefined,
    hostsPath: pod.hostsPath || undefined,
    shmPath: pod.shmPath,
    config: pod.config,
  };
}

/** A Localhost seccomp profile: an OCI seccomp JSON file on the node. */
async function loadSeccompProfile(config: ContainerConfig): Promise<unknown> {
  const path = seccompProfilePath(config);
  if (!path) return undefined;
  const field = 'linux.security_context.seccomp.localhost_ref';
  if (!isAbsolute(path)) throw invalidArgument(field, `"${path}" is not an absolute path`);
  let profile: { defaultAction?: unknown };
  try {
    profile = JSON.parse(await readFile(path, 'utf8')) as { defaultAction?: unknown };
  } catch (err) {
    throw invalidArgument(field, `cannot read seccomp profile ${path}: ${(err as Error).message}`);
  }
  if (typeof profile !== 'object' || profile === null || typeof profile.defaultAction !== 'string') {
    throw invalidArgument(field, `${path} is not a seccomp profile (no "defaultAction")`);
  }
  return profile;
}

function exists(path: string): Promise<boolean> {
  return access(path).then(() => true, () => false);
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
