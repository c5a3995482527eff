// A plugin of our own for what the field's sample plugins never do: answer garbage, never register,
// ask for changes unprompted. It speaks the plugin side of NRI (the connection multiplexer, ttrpc)
// with skiffd's wire code; the sample plugins (test/support/nri.ts) prove that code against
// containerd/nri's own Go stub.
import { connect, type Socket } from 'node:net';
import {
  ConfigureResponse,
  ContainerAdjustment,
  CreateContainerRequest,
  CreateContainerResponse,
  Empty,
  Event,
  RegisterPluginRequest,
  StateChangeEvent,
  StopContainerRequest,
  SynchronizeResponse,
  UpdateContainersRequest,
  UpdateContainersResponse,
  type DeepPartial,
  type ContainerEviction,
  type ContainerUpdate,
  type PodSandbox,
  type Container,
} from '../../proto/gen/nri/v1alpha1/api.ts';
import { SynchronizeRequest } from '../../proto/gen/nri/v1alpha1/api.ts';
import { Mux, PLUGIN_SERVICE_CONN, RUNTIME_SERVICE_CONN } from '../../node/skiffd/nri/wire/mux.ts';
import { TtrpcEndpoint } from '../../node/skiffd/nri/wire/ttrpc.ts';

export interface TestPluginBehaviour {
  idx: string;
  name: string;
  /** Do not register at all (the runtime is to give up after its registration timeout). */
  neverRegister?: boolean;
  /** What to answer CreateContainer with: an adjustment, or bytes that are no message. */
  onCreate?: (
    pod: PodSandbox,
    container: Container,
  ) => { adjust?: DeepPartial<ContainerAdjustment>; garbage?: Uint8Array } | Promise<{ adjust?: DeepPartial<ContainerAdjustment>; garbage?: Uint8Array }>;
}

/** An event the runtime told the plugin of, with the ids it named. */
export interface SeenEvent {
  event: string;
  pod?: string;
  container?: string;
}

export interface TestPlugin {
  /** What the runtime synchronized it with. */
  synced: Promise<{ pods: PodSandbox[]; containers: Container[] }>;
  /** Every event since, in the order they came. */
  events: SeenEvent[];
  /** Asks the runtime for updates and evictions unprompted; resolves with the updates that failed. */
  updateContainers(update: ContainerUpdate[], evict?: ContainerEviction[]): Promise<ContainerUpdate[]>;
  /** Resolves when the runtime closes the connection. */
  closed: Promise<void>;
  close(): void;
}

export function connectTestPlugin(socketPath: string, behaviour: TestPluginBehaviour): Promise<TestPlugin> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(socketPath);
    socket.once('error', reject);
    socket.once('connect', () => {
      const mux = new Mux(socket);
      let syncedResolve: (v: { pods: PodSandbox[]; containers: Container[] }) => void = () => {};
      const synced = new Promise<{ pods: PodSandbox[]; containers: Container[] }>((r) => (syncedResolve = r));
      const closed = new Promise<void>((r) => mux.onClose(() => r()));
      const pods: PodSandbox[] = [];
      const containers: Container[] = [];
      const events: SeenEvent[] = [];
      const seen = (event: string, pod?: PodSandbox, container?: Container) =>
        events.push({ event, ...(pod ? { pod: pod.id } : {}), ...(container ? { container: container.id } : {}) });
      const serve = async (_service: string, method: string, payload: Uint8Array): Promise<Uint8Array> => {
        switch (method) {
          case 'Configure':
            return ConfigureResponse.encode({ events: 0 }).finish();
          case 'Synchronize': {
            const req = SynchronizeRequest.decode(payload);
            pods.push(...req.pods);
            containers.push(...req.containers);
            if (!req.more) syncedResolve({ pods, containers });
            return SynchronizeResponse.encode({ update: [], more: req.more }).finish();
          }
          case 'CreateContainer': {
            const req = CreateContainerRequest.decode(payload);
            seen('CREATE_CONTAINER', req.pod, req.container);
            const answer = await behaviour.onCreate?.(req.pod!, req.container!);
            if (answer?.garbage) return answer.garbage;
            const adjust = answer?.adjust ? ContainerAdjustment.fromPartial(answer.adjust) : undefined;
            return CreateContainerResponse.encode({ adjust, update: [], evict: [] }).finish();
          }
          case 'StateChange': {
            const req = StateChangeEvent.decode(payload);
            seen(Event[req.event], req.pod, req.container);
            return Empty.encode({}).finish();
          }
          case 'StopContainer': {
            const req = StopContainerRequest.decode(payload);
            seen('STOP_CONTAINER', req.pod, req.container);
            return Empty.encode({}).finish();
          }
          default:
            return Empty.encode({}).finish();
        }
      };
      const pluginConn = mux.open(PLUGIN_SERVICE_CONN, (d) => server.receive(d));
      const runtimeConn = mux.open(RUNTIME_SERVICE_CONN, (d) => client.receive(d));
      const server = new TtrpcEndpoint(
        (b) => pluginConn.write(b),
        () => mux.close(),
        serve,
      );
      const client = new TtrpcEndpoint(
        (b) => runtimeConn.write(b),
        () => mux.close(),
      );
      const call = (method: string, payload: Uint8Array) => client.call('nri.pkg.api.v1alpha1.Runtime', method, payload, 10_000);
      const plugin: TestPlugin = {
        synced,
        events,
        closed,
        close: () => mux.close(),
        updateContainers: async (update, evict = []) =>
          UpdateContainersResponse.decode(await call('UpdateContainers', UpdateContainersRequest.encode({ update, evict }).finish())).failed,
      };
      if (behaviour.neverRegister) return resolve(plugin);
      call('RegisterPlugin', RegisterPluginRequest.encode({ pluginName: behaviour.name, pluginIdx: behaviour.idx }).finish()).then(
        () => resolve(plugin),
        reject,
      );
    });
  });
}
