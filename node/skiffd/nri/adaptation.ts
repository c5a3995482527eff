// The runtime side of NRI at the protocol level: the plugins that are connected (external ones on
// the NRI socket, pre-installed ones the runtime starts from its plugin directory), in index order;
// the events handed to each in turn; their answers merged (merge.ts). Everything that reaches the
// plugins runs one at a time (`exclusive`), so every plugin sees events in the order they happened
// and a plugin that connects is synchronized between two events, never during one, nor while a pod
// or container is being made (sync-gate.ts).
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { dirname, join } from 'node:path';
import type {
  Event,
  Container,
  ContainerEviction,
  ContainerUpdate,
  CreateContainerRequest,
  PodSandbox,
  StopContainerRequest,
  UpdateContainerRequest,
  UpdateContainersRequest,
} from '../../../proto/gen/nri/v1alpha1/api.ts';
import type { Logger } from '../logger.ts';
import { checkPrivateDir } from '../oci/exec-helper.ts';
import type { NriConfig } from './config.ts';
import { CreateResult, StopResult, UpdateResult } from './merge.ts';
import { checkPluginIndex, Plugin, type PluginHost, type PluginTimeouts } from './plugin.ts';
import { SyncGate } from './sync-gate.ts';

/** What the adaptation needs from the runtime. */
export interface RuntimeState {
  /** Every pod and container, for a plugin being synchronized. */
  snapshot(): Promise<{ pods: PodSandbox[]; containers: Container[] }>;
  /** Applies resource updates and evictions plugins asked for; resolves with the updates that failed. */
  apply(updates: ContainerUpdate[], evictions: ContainerEviction[], why: string): Promise<ContainerUpdate[]>;
}

/** Only root (skiffd) may connect: a plugin can change every container. */
const SOCKET_MODE = 0o600;

export class Adaptation implements PluginHost {
  readonly timeouts: PluginTimeouts;
  /** CRI calls that make pods and containers hold synchronizations off. */
  readonly gate = new SyncGate();
  private plugins: Plugin[] = [];
  private server: Server | undefined;
  private socketIno: number | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private stopped = false;
  /** Sockets accepted on the NRI socket and not yet closed, registered or not. */
  private readonly connections = new Set<Socket>();

  constructor(
    private readonly config: NriConfig,
    readonly log: Logger,
    private readonly runtime: { name: string; version: string },
    private readonly state: RuntimeState,
  ) {
    this.timeouts = { registrationMs: config.registrationTimeoutMs, requestMs: config.requestTimeoutMs };
  }

  /** Any plugin to tell anything: when false, events cost nothing. */
  get active(): boolean {
    return this.plugins.length > 0;
  }

  /** Runs fn after everything queued before it, alone. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => {});
    return run;
  }

  /** Starts the pre-installed plugins and synchronizes them, then listens for external ones. */
  async start(): Promise<void> {
    const launched: Plugin[] = [];
    for (const found of this.discover()) {
      try {
        const plugin = this.launch(found);
        await plugin.start(this.runtime.name, this.runtime.version);
        launched.push(plugin);
      } catch (err) {
        this.log.warn('failed to start pre-installed NRI plugin', { plugin: `${found.idx}-${found.name}`, err: (err as Error).message });
      }
    }
    if (launched.length > 0) {
      await this.exclusive(async () => {
        for (const plugin of launched) if (await this.synchronize(plugin)) this.add(plugin);
      });
    }
    if (this.config.disableConnections) {
      this.log.info('connections from external NRI plugins are disabled');
      return;
    }
    await this.listen();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const plugin of [...this.plugins]) plugin.close('the runtime is shutting down');
    if (this.server) {
      const server = this.server;
      this.server = undefined;
      // close() waits for every connection to end: those still registering are cut here.
      const closing = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of this.connections) socket.destroy();
      await closing;
      // Only our socket: not one another runtime bound meanwhile.
      const ino = (() => {
        try {
          return statSync(this.config.socketPath).ino;
        } catch {
          return undefined;
        }
      })();
      if (ino !== undefined && ino === this.socketIno) rmSync(this.config.socketPath, { force: true });
    }
  }

  // ---- PluginHost ----

  closed(plugin: Plugin): void {
    const before = this.plugins.length;
    this.plugins = this.plugins.filter((p) => p !== plugin);
    if (this.plugins.length !== before) this.logOrder();
  }

  updateContainers(plugin: Plugin, request: UpdateContainersRequest): Promise<ContainerUpdate[]> {
    // Not under `exclusive`: a plugin may ask while the runtime waits for its answer to an event.
    return this.state.apply(request.update, request.evict, `unsolicited request of plugin "${plugin.fullName}"`);
  }

  // ---- events (call inside `exclusive`) ----

  async stateChange(event: Event, pod: PodSandbox, container?: Container): Promise<void> {
    for (const plugin of [...this.plugins]) await plugin.stateChange({ event, pod, container });
  }

  async createContainer(request: CreateContainerRequest): Promise<CreateResult> {
    const result = new CreateResult(request);
    for (const plugin of [...this.plugins]) result.apply(await plugin.createContainer(request), plugin.fullName);
    return result;
  }

  async updateContainer(request: UpdateContainerRequest): Promise<UpdateResult> {
    const result = new UpdateResult(request);
    for (const plugin of [...this.plugins]) result.apply(await plugin.updateContainer(request), plugin.fullName);
    return result;
  }

  async stopContainer(request: StopContainerRequest): Promise<StopResult> {
    const result = new StopResult();
    for (const plugin of [...this.plugins]) result.apply(await plugin.stopContainer(request), plugin.fullName);
    return result;
  }

  // ---- plugins ----

  private add(plugin: Plugin): void {
    if (plugin.isClosed) return;
    this.plugins.push(plugin);
    // Stable: plugins of one index keep the order they came in.
    this.plugins.sort((a, b) => (a.idx < b.idx ? -1 : a.idx > b.idx ? 1 : 0));
    this.logOrder();
  }

  private logOrder(): void {
    this.log.info('NRI plugin invocation order', {
      plugins: this.plugins.map((p) => `${p.fullName} (${p.external ? 'external' : 'pre-installed'})`).join(', ') || '(none)',
    });
  }

  /** Synchronizes one plugin with every pod and container, applies what it asks; false: it is dropped. */
  private async synchronize(plugin: Plugin): Promise<boolean> {
    try {
      const { pods, containers } = await this.state.snapshot();
      const updates = await plugin.synchronize(pods, containers);
      const failed = await this.state.apply(updates, [], `synchronization of plugin "${plugin.fullName}"`);
      if (failed.length > 0) this.log.warn('post-sync updates failed', { plugin: plugin.fullName, failed: failed.map((u) => u.containerId).join(',') });
      this.log.info('NRI plugin synchronized', { plugin: plugin.fullName, pods: pods.length, containers: containers.length });
      return true;
    } catch (err) {
      this.log.warn('failed to synchronize NRI plugin', { plugin: plugin.fullName, err: (err as Error).message });
      plugin.close(`failed to synchronize: ${(err as Error).message}`);
      return false;
    }
  }

  /**
   * Whoever connects here can change any container (mounts, hooks, devices): the socket is root's
   * alone, whatever umask skiffd was started with, and its directory is ours (not a link, not
   * another user's, parents others cannot write), so nobody else can put a socket of theirs there.
   */
  private async listen(): Promise<void> {
    const path = this.config.socketPath;
    const dir = dirname(path);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    checkPrivateDir(dir, 'NRI socket directory');
    // As containerd does: a stale socket (or another runtime's) is replaced.
    rmSync(path, { force: true });
    const server = createServer((socket) => this.accept(socket));
    const listening = new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.once('listening', () => {
        server.off('error', reject);
        resolve();
      });
    });
    // A unix socket is bound inside listen(): 0600 from the first moment it exists.
    const previous = process.umask(0o177);
    try {
      server.listen(path);
    } finally {
      process.umask(previous);
    }
    await listening;
    chmodSync(path, SOCKET_MODE);
    server.on('error', (err) => this.log.error('NRI socket failed', { socket: path, err: err.message }));
    this.server = server;
    this.socketIno = statSync(path).ino;
    this.log.info('NRI socket listening', { socket: path });
  }

  private accept(socket: Socket): void {
    if (this.stopped) {
      socket.destroy();
      return;
    }
    this.connections.add(socket);
    socket.once('close', () => this.connections.delete(socket));
    const plugin = new Plugin(socket, this);
    // A plugin that goes away while its synchronization waits for CRI calls stops waiting.
    const gone = new AbortController();
    socket.once('close', () => gone.abort());
    plugin.start(this.runtime.name, this.runtime.version).then(
      () => {
        if (this.gate.blocks > 0)
          this.log.info('NRI plugin synchronization waits for pod and container creations in flight', { plugin: plugin.fullName, calls: this.gate.blocks });
        return this.gate
          .synchronize(
            () =>
              this.exclusive(async () => {
                if (this.stopped) return plugin.close('the runtime is shutting down');
                if (await this.synchronize(plugin)) {
                  this.add(plugin);
                  this.log.info('NRI plugin connected and synchronized', { plugin: plugin.fullName });
                }
              }),
            gone.signal,
          )
          .catch((err: Error) => {
            this.log.warn('failed to synchronize NRI plugin', { plugin: plugin.fullName, err: err.message });
            plugin.close(`failed to synchronize: ${err.message}`);
          });
      },
      (err: Error) => this.log.warn('failed to start external NRI plugin', { plugin: plugin.fullName, err: err.message }),
    );
  }

  /** Executables named NN-name in the plugin directory, each with its configuration, if any. */
  private discover(): { idx: string; name: string; path: string; config: string }[] {
    let entries: string[];
    try {
      const dirProblem = untrusted(statSync(this.config.pluginPath));
      if (dirProblem) {
        this.log.warn('not starting plugins from the NRI plugin directory', { dir: this.config.pluginPath, reason: dirProblem });
        return [];
      }
      entries = readdirSync(this.config.pluginPath).sort();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const found: { idx: string; name: string; path: string; config: string }[] = [];
    for (const entry of entries) {
      const path = join(this.config.pluginPath, entry);
      let st: ReturnType<typeof statSync>;
      try {
        st = statSync(path);
      } catch {
        continue;
      }
      if (!st.isFile() || (st.mode & 0o111) === 0) continue;
      const dash = entry.indexOf('-');
      const idx = dash < 0 ? entry : entry.slice(0, dash);
      const problem = untrusted(st) ?? (dash < 0 ? `invalid plugin name "${entry}", idx-pluginname expected` : checkPluginIndex(idx));
      if (problem) {
        this.log.warn('ignoring file in the NRI plugin directory', { file: path, reason: problem });
        continue;
      }
      const name = entry.slice(dash + 1);
      found.push({ idx, name, path, config: this.pluginConfig(idx, name) });
    }
    for (const f of found) this.log.info('discovered NRI plugin', { plugin: `${f.idx}-${f.name}`, path: f.path });
    return found;
  }

  /** <config dir>/NN-name.conf, else <config dir>/name.conf, else nothing. */
  private pluginConfig(idx: string, name: string): string {
    for (const file of [`${idx}-${name}.conf`, `${name}.conf`]) {
      try {
        return readFileSync(join(this.config.pluginConfigPath, file), 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.log.warn('cannot read NRI plugin configuration', { file, err: (err as Error).message });
      }
    }
    return '';
  }

  /** Starts a pre-installed plugin with one end of a socket pair as its fd 3, as containerd does. */
  private launch(found: { idx: string; name: string; path: string; config: string }): Plugin {
    this.log.info('starting pre-installed NRI plugin', { plugin: `${found.idx}-${found.name}` });
    // stdio[3] 'pipe' is a unix socket pair: the plugin's end is its fd 3.
    const child = spawn(found.path, [], {
      env: { NRI_PLUGIN_NAME: found.name, NRI_PLUGIN_IDX: found.idx, NRI_PLUGIN_SOCKET: '3' },
      stdio: ['ignore', 'ignore', 'ignore', 'pipe'],
      detached: false,
    });
    child.on('error', (err) => this.log.warn('NRI plugin process failed', { plugin: `${found.idx}-${found.name}`, err: err.message }));
    const socket = child.stdio[3] as Socket;
    const plugin = new Plugin(socket, this, { idx: found.idx, name: found.name, config: found.config, child });
    child.once('exit', (code, signal) => {
      if (!plugin.isClosed) plugin.close(`plugin process exited (${signal ?? `code ${code}`})`);
    });
    return plugin;
  }
}

/**
 * Why a plugin file (or the directory holding them) must not be run from: it runs as root and sees every
 * pod, so only root (or skiffd's own user) may be able to change it.
 */
function untrusted(st: { uid: number; mode: number }): string | undefined {
  const self = process.getuid?.() ?? 0;
  if (st.uid !== 0 && st.uid !== self) return `owned by uid ${st.uid}: only root's plugins are run (chown root)`;
  if (st.mode & 0o022) return `writable by group or others (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}): chmod go-w`;
  return undefined;
}
