// One NRI plugin on one connection: the multiplexer, the runtime's ttrpc client of the Plugin
// service and its ttrpc server of the Runtime service, registration, configuration, and each call
// bounded by the request timeout. What a plugin does wrong decides what happens next:
// - it answers with an error status: the event fails (the caller decides what that means);
// - it does not answer in time, breaks the protocol, answers what does not decode, or goes away:
//   it is closed (and killed, if the runtime started it) with a log line, and the event goes on
//   without it.
import type { ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import {
  ConfigureRequest,
  ConfigureResponse,
  CreateContainerRequest,
  CreateContainerResponse,
  Empty,
  Event,
  RegisterPluginRequest,
  StateChangeEvent,
  StopContainerRequest,
  StopContainerResponse,
  SynchronizeRequest,
  SynchronizeResponse,
  UpdateContainerRequest,
  UpdateContainerResponse,
  UpdateContainersRequest,
  UpdateContainersResponse,
  type ContainerUpdate,
  type Container,
  type PodSandbox,
} from '../../../proto/gen/nri/v1alpha1/api.ts';
import type { Logger } from '../logger.ts';
import { RequestLimit, RequestLimitExceeded } from './request-limit.ts';
import { Mux, PLUGIN_SERVICE_CONN, RUNTIME_SERVICE_CONN } from './wire/mux.ts';
import { Code, MAX_MESSAGE_LENGTH, TtrpcConnectionError, TtrpcEndpoint, TtrpcStatusError } from './wire/ttrpc.ts';

const PLUGIN_SERVICE = 'nri.pkg.api.v1alpha1.Plugin';
const RUNTIME_SERVICE = 'nri.pkg.api.v1alpha1.Runtime';

/** Every event a plugin can subscribe to: bit n-1 for event n. */
export const VALID_EVENTS = (1 << (Event.LAST - 1)) - 1;

export const eventBit = (e: Event) => 1 << (e - 1);

interface Codec<T> {
  encode(message: T): { finish(): Uint8Array };
  decode(input: Uint8Array): T;
}

export interface PluginTimeouts {
  registrationMs: number;
  requestMs: number;
}

/** What a plugin connection needs from the runtime side. */
export interface PluginHost {
  readonly log: Logger;
  readonly timeouts: PluginTimeouts;
  /** A plugin asked for changes on its own; resolves with the updates that failed. */
  updateContainers(plugin: Plugin, request: UpdateContainersRequest): Promise<ContainerUpdate[]>;
  /** The connection is gone (for whatever reason); the plugin is to be forgotten. */
  closed(plugin: Plugin): void;
}

export interface LaunchedPlugin {
  idx: string;
  name: string;
  config: string;
  child: ChildProcess;
}

/** A plugin declined or failed an event in a way the protocol says fails the event. */
export class PluginRefusal extends Error {
  override name = 'PluginRefusal';
}

export class Plugin {
  idx = '';
  name = '';
  events = 0;
  private readonly mux: Mux;
  private readonly client: TtrpcEndpoint;
  private readonly server: TtrpcEndpoint;
  private readonly config: string;
  private readonly child: ChildProcess | undefined;
  private closedReason: string | undefined;
  private registered?: { resolve(): void; reject(err: Error): void };
  /** Its unsolicited UpdateContainers requests: a few at a time, a bounded number waiting. */
  private readonly unsolicited = new RequestLimit();

  constructor(
    socket: Socket,
    private readonly host: PluginHost,
    launched?: LaunchedPlugin,
  ) {
    this.child = launched?.child;
    this.config = launched?.config ?? '';
    if (launched) {
      this.idx = launched.idx;
      this.name = launched.name;
    }
    this.mux = new Mux(socket);
    const pluginConn = this.mux.open(PLUGIN_SERVICE_CONN, (data) => this.client.receive(data));
    const runtimeConn = this.mux.open(RUNTIME_SERVICE_CONN, (data) => this.server.receive(data));
    const broken = (err: Error) => this.close(err.message);
    this.client = new TtrpcEndpoint((b) => pluginConn.write(b), broken);
    this.server = new TtrpcEndpoint(
      (b) => runtimeConn.write(b),
      broken,
      (service, method, payload) => this.serve(service, method, payload),
    );
    this.mux.onClose((err) => this.close(err ? err.message : 'connection closed'));
  }

  get external(): boolean {
    return this.child === undefined;
  }

  /** How logs and errors name it: `10-logger`. */
  get fullName(): string {
    return `${this.idx || '??'}-${this.name || 'plugin'}`;
  }

  get isClosed(): boolean {
    return this.closedReason !== undefined;
  }

  subscribed(e: Event): boolean {
    return (this.events & eventBit(e)) !== 0;
  }

  /** Waits for RegisterPlugin (bounded by the registration timeout), then configures the plugin. */
  async start(runtimeName: string, runtimeVersion: string): Promise<void> {
    const { registrationMs, requestMs } = this.host.timeouts;
    let timer: NodeJS.Timeout | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        this.registered = { resolve, reject };
        timer = setTimeout(() => reject(new Error(`plugin registration timed out (${registrationMs} ms)`)), registrationMs);
        this.mux.onClose(() => reject(new Error(`failed to register plugin, connection closed${this.closedReason ? ` (${this.closedReason})` : ''}`)));
      });
    } catch (err) {
      this.close((err as Error).message);
      throw err;
    } finally {
      clearTimeout(timer);
      this.registered = undefined;
    }
    let reply: ConfigureResponse;
    try {
      reply = await this.call('Configure', ConfigureRequest, ConfigureResponse, {
        config: this.config,
        runtimeName,
        runtimeVersion,
        registrationTimeout: BigInt(registrationMs),
        requestTimeout: BigInt(requestMs),
      });
    } catch (err) {
      this.close(`failed to configure plugin: ${(err as Error).message}`);
      throw new Error(`failed to configure plugin: ${(err as Error).message}`);
    }
    const extra = reply.events & ~VALID_EVENTS;
    if (extra !== 0) {
      this.close(`invalid plugin events: 0x${extra.toString(16)}`);
      throw new Error(`invalid plugin events: 0x${extra.toString(16)}`);
    }
    this.events = reply.events === 0 ? VALID_EVENTS : reply.events;
    this.host.log.info('plugin configured', { plugin: this.fullName });
  }

  /**
   * Hands the plugin every pod and container, split over several requests (`more`) when one would
   * exceed ttrpc's message size. Resolves with the updates it asks for.
   */
  async synchronize(pods: PodSandbox[], containers: Container[]): Promise<ContainerUpdate[]> {
    const chunks = splitForSync(pods, containers);
    let reply: SynchronizeResponse | undefined;
    for (const [i, chunk] of chunks.entries()) {
      const more = i < chunks.length - 1;
      reply = await this.call('Synchronize', SynchronizeRequest, SynchronizeResponse, { ...chunk, more });
      if (more && (reply.update.length > 0 || reply.more !== more)) {
        this.close('plugin does not handle split sync requests');
        throw new Error('plugin does not handle split sync requests');
      }
    }
    return reply?.update ?? [];
  }

  /** undefined: not subscribed, or dropped while handling it. */
  createContainer(request: CreateContainerRequest): Promise<CreateContainerResponse | undefined> {
    return this.event(Event.CREATE_CONTAINER, 'CreateContainer', CreateContainerRequest, CreateContainerResponse, request);
  }

  updateContainer(request: UpdateContainerRequest): Promise<UpdateContainerResponse | undefined> {
    return this.event(Event.UPDATE_CONTAINER, 'UpdateContainer', UpdateContainerRequest, UpdateContainerResponse, request);
  }

  stopContainer(request: StopContainerRequest): Promise<StopContainerResponse | undefined> {
    return this.event(Event.STOP_CONTAINER, 'StopContainer', StopContainerRequest, StopContainerResponse, request);
  }

  async stateChange(event: StateChangeEvent): Promise<void> {
    await this.event(event.event, 'StateChange', StateChangeEvent, Empty, event);
  }

  /** Closes the connection (and kills a plugin the runtime started). Idempotent. */
  close(reason: string): void {
    if (this.closedReason !== undefined) return;
    this.closedReason = reason;
    this.host.log.info('connection to plugin closed', { plugin: this.fullName, reason });
    this.client.close(new TtrpcConnectionError(reason));
    this.server.close(new TtrpcConnectionError(reason));
    this.mux.close();
    this.registered?.reject(new Error(`failed to register plugin, connection closed (${reason})`));
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    this.host.closed(this);
  }

  private async event<Req, Resp>(e: Event, method: string, req: Codec<Req>, resp: Codec<Resp>, message: Req): Promise<Resp | undefined> {
    if (this.isClosed || !this.subscribed(e)) return undefined;
    try {
      return await this.call(method, req, resp, message);
    } catch (err) {
      if (err instanceof TtrpcStatusError) throw new PluginRefusal(`plugin "${this.fullName}" failed ${method}: ${err.message}`);
      this.host.log.error('closing plugin: it failed to handle an event', { plugin: this.fullName, event: Event[e], err: (err as Error).message });
      this.close(`failed to handle ${method}: ${(err as Error).message}`);
      return undefined;
    }
  }

  private async call<Req, Resp>(method: string, req: Codec<Req>, resp: Codec<Resp>, message: Req): Promise<Resp> {
    const payload = await this.client.call(PLUGIN_SERVICE, method, req.encode(message).finish(), this.host.timeouts.requestMs);
    try {
      return resp.decode(payload);
    } catch (err) {
      // An answer that is not the message asked for is garbage, as a broken frame is.
      throw new TtrpcConnectionError(`${method}: the answer does not decode (${(err as Error).message})`);
    }
  }

  private async serve(service: string, method: string, payload: Uint8Array): Promise<Uint8Array> {
    if (service !== RUNTIME_SERVICE) throw new TtrpcStatusError(Code.UNIMPLEMENTED, `service ${service} is not served here`);
    if (method === 'RegisterPlugin') {
      const req = RegisterPluginRequest.decode(payload);
      const problem = this.external ? registrationProblem(req) : undefined;
      if (problem) {
        this.registered?.reject(new Error(`plugin registered ${problem}`));
        throw new TtrpcStatusError(Code.UNKNOWN, problem);
      }
      if (this.external) {
        this.idx = req.pluginIdx;
        this.name = req.pluginName;
      }
      this.host.log.info('plugin registered', { plugin: this.fullName, kind: this.external ? 'external' : 'pre-installed' });
      this.registered?.resolve();
      return Empty.encode({}).finish();
    }
    if (method === 'UpdateContainers') {
      const req = UpdateContainersRequest.decode(payload);
      this.host.log.info('plugin requested container updates', { plugin: this.fullName, updates: req.update.length, evictions: req.evict.length });
      const failed = await this.unsolicited
        .run(async () => {
          // Gone while it waited: nobody is left to answer.
          if (this.isClosed) throw new TtrpcStatusError(Code.FAILED_PRECONDITION, 'the plugin connection is closed');
          return this.host.updateContainers(this, req);
        })
        .catch((err: Error) => {
          if (!(err instanceof RequestLimitExceeded)) throw err;
          this.host.log.warn('refusing NRI plugin request: too many in progress', { plugin: this.fullName, method, err: err.message });
          throw new TtrpcStatusError(Code.RESOURCE_EXHAUSTED, `too many UpdateContainers requests from plugin "${this.fullName}": ${err.message}`);
        });
      return UpdateContainersResponse.encode({ failed }).finish();
    }
    throw new TtrpcStatusError(Code.UNIMPLEMENTED, `method ${method} is not served here`);
  }
}

/** What is wrong with an external plugin's registration, if anything. */
function registrationProblem(req: RegisterPluginRequest): string | undefined {
  if (req.pluginName === '') return 'invalid (empty) plugin name';
  const problem = checkPluginIndex(req.pluginIdx);
  return problem ? `invalid plugin index: ${problem}` : undefined;
}

/** Plugin indices are two digits. */
export function checkPluginIndex(idx: string): string | undefined {
  if (idx.length !== 2) return `invalid plugin index "${idx}", must be 2 digits`;
  if (!/^[0-9][0-9]$/.test(idx)) return `invalid plugin index "${idx}" (not [0-9][0-9])`;
  return undefined;
}

/** Pods and containers in requests that each stay well within ttrpc's message size. */
function splitForSync(pods: PodSandbox[], containers: Container[]): { pods: PodSandbox[]; containers: Container[] }[] {
  const budget = MAX_MESSAGE_LENGTH / 2;
  const chunks: { pods: PodSandbox[]; containers: Container[] }[] = [];
  let current = { pods: [] as PodSandbox[], containers: [] as Container[] };
  let size = 0;
  const push = (bytes: number, add: () => void) => {
    if (size + bytes > budget && size > 0) {
      chunks.push(current);
      current = { pods: [], containers: [] };
      size = 0;
    }
    add();
    size += bytes;
  };
  for (const p of pods) push(SynchronizeRequest.encode({ pods: [p], containers: [], more: false }).finish().length, () => current.pods.push(p));
  for (const c of containers) push(SynchronizeRequest.encode({ pods: [], containers: [c], more: false }).finish().length, () => current.containers.push(c));
  chunks.push(current);
  return chunks;
}
