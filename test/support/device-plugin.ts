// A small device plugin for tests: the kubelet's deviceplugin/v1beta1 gRPC API on a socket in the
// kubelet's device-plugin directory. It registers a resource with the kubelet, lists its devices, and
// answers Allocate with CDI device names, as the GPU vendors' plugins do today. The messages are encoded
// by hand (a few fields each), wire-compatible with the kubelet's api.proto.
import { rmSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { BinaryReader, BinaryWriter } from '@bufbuild/protobuf/wire';
import { until } from './wait.ts';

/** Where the kubelet looks for plugins and listens for their registration (fixed in the kubelet). */
export const DEVICE_PLUGIN_DIR = '/var/lib/kubelet/device-plugins';
const KUBELET_SOCKET = join(DEVICE_PLUGIN_DIR, 'kubelet.sock');

type Codec<T> = { encode(v: T): Buffer; decode(b: Buffer): T };

const empty: Codec<Record<string, never>> = { encode: () => Buffer.alloc(0), decode: () => ({}) };

interface RegisterRequest {
  version: string;
  endpoint: string;
  resourceName: string;
}
const registerRequest: Codec<RegisterRequest> = {
  encode: (v) => Buffer.from(new BinaryWriter().uint32(10).string(v.version).uint32(18).string(v.endpoint).uint32(26).string(v.resourceName).finish()),
  decode: () => ({ version: '', endpoint: '', resourceName: '' }),
};

/** DevicePluginOptions: no pre-start hook, no preferred allocation. */
const pluginOptions: Codec<Record<string, never>> = empty;

/** ListAndWatchResponse { repeated Device devices = 1 } with Device { string ID = 1; string health = 2 }. */
const listResponse: Codec<{ devices: { id: string; health: string }[] }> = {
  encode: (v) => {
    const w = new BinaryWriter();
    for (const d of v.devices) {
      w.uint32(10).fork();
      w.uint32(10).string(d.id).uint32(18).string(d.health);
      w.join();
    }
    return Buffer.from(w.finish());
  },
  decode: () => ({ devices: [] }),
};

/** AllocateRequest { repeated ContainerAllocateRequest container_requests = 1 } { repeated string devices_ids = 1 }. */
const allocateRequest: Codec<{ containers: string[][] }> = {
  encode: () => Buffer.alloc(0),
  decode: (b) => {
    const r = new BinaryReader(b);
    const containers: string[][] = [];
    while (r.pos < r.len) {
      const tag = r.uint32();
      if (tag >>> 3 !== 1) {
        r.skip(tag & 7);
        continue;
      }
      const inner = new BinaryReader(r.bytes());
      const ids: string[] = [];
      while (inner.pos < inner.len) {
        const t = inner.uint32();
        if (t >>> 3 === 1) ids.push(inner.string());
        else inner.skip(t & 7);
      }
      containers.push(ids);
    }
    return { containers };
  },
};

/** AllocateResponse { repeated ContainerAllocateResponse container_responses = 1 }, each with cdi_devices = 5 ({ string name = 1 }). */
const allocateResponse: Codec<{ containers: { cdiDevices: string[] }[] }> = {
  encode: (v) => {
    const w = new BinaryWriter();
    for (const c of v.containers) {
      w.uint32(10).fork();
      for (const name of c.cdiDevices) {
        w.uint32(42).fork();
        w.uint32(10).string(name);
        w.join();
      }
      w.join();
    }
    return Buffer.from(w.finish());
  },
  decode: () => ({ containers: [] }),
};

const method = <Req, Res>(path: string, req: Codec<Req>, res: Codec<Res>, responseStream = false) => ({
  path,
  requestStream: false,
  responseStream,
  requestSerialize: (v: Req) => req.encode(v),
  requestDeserialize: (b: Buffer) => req.decode(b),
  responseSerialize: (v: Res) => res.encode(v),
  responseDeserialize: (b: Buffer) => res.decode(b),
});

const DEVICE_PLUGIN = {
  GetDevicePluginOptions: method('/v1beta1.DevicePlugin/GetDevicePluginOptions', empty, pluginOptions),
  ListAndWatch: method('/v1beta1.DevicePlugin/ListAndWatch', empty, listResponse, true),
  GetPreferredAllocation: method('/v1beta1.DevicePlugin/GetPreferredAllocation', empty, empty),
  Allocate: method('/v1beta1.DevicePlugin/Allocate', allocateRequest, allocateResponse),
  PreStartContainer: method('/v1beta1.DevicePlugin/PreStartContainer', empty, empty),
};
const REGISTRATION = { Register: method('/v1beta1.Registration/Register', registerRequest, empty) };

export interface DevicePlugin {
  /** The device IDs the kubelet asked to allocate, per Allocate call and container. */
  readonly allocations: string[][];
  /** The kubelet is watching the device list (so it knows the devices). */
  watched(): boolean;
  stop(): Promise<void>;
}

/**
 * Serves `resourceName` with `devices` (IDs), answering Allocate with `cdiName(id)` for each device, and
 * registers with the kubelet (which must be running). Bounded: waiting for the kubelet, and then registering,
 * each fail after `timeoutMs` (default 2 minutes: a slow node starts its device manager late).
 */
export async function startDevicePlugin(options: {
  resourceName: string;
  devices: string[];
  cdiName: (id: string) => string;
  timeoutMs?: number;
}): Promise<DevicePlugin> {
  const timeoutMs = options.timeoutMs ?? 120_000;
  // The kubelet answers HTTP before its device manager starts, and that start empties the directory (our
  // socket with it) before it listens: a plugin must appear only once the kubelet's socket accepts.
  await until(`the kubelet's device plugin socket ${KUBELET_SOCKET} to accept connections (is the kubelet running?)`, accepts, timeoutMs);
  const endpoint = `skiff-test-${process.pid}.sock`;
  const socket = join(DEVICE_PLUGIN_DIR, endpoint);
  rmSync(socket, { force: true });
  const allocations: string[][] = [];
  const streams = new Set<grpc.ServerWritableStream<unknown, unknown>>();
  const server = new grpc.Server();
  const unaryEmpty = (_call: unknown, done: grpc.sendUnaryData<unknown>) => done(null, {});
  const listAndWatch = (call: grpc.ServerWritableStream<unknown, unknown>) => {
    streams.add(call);
    call.on('cancelled', () => streams.delete(call));
    call.write({ devices: options.devices.map((id) => ({ id, health: 'Healthy' })) });
  };
  const allocate = (call: grpc.ServerUnaryCall<{ containers: string[][] }, unknown>, done: grpc.sendUnaryData<unknown>) => {
    allocations.push(...call.request.containers);
    done(null, { containers: call.request.containers.map((ids) => ({ cdiDevices: ids.map(options.cdiName) })) });
  };
  server.addService(DEVICE_PLUGIN as unknown as grpc.ServiceDefinition, {
    GetDevicePluginOptions: unaryEmpty,
    ListAndWatch: listAndWatch,
    GetPreferredAllocation: unaryEmpty,
    Allocate: allocate,
    PreStartContainer: unaryEmpty,
  });
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
  const stop = async () => {
    for (const s of streams) s.end();
    await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
    rmSync(socket, { force: true });
  };
  try {
    const Client = grpc.makeGenericClientConstructor(REGISTRATION as unknown as grpc.ServiceDefinition, 'Registration');
    const client = new Client(`unix://${KUBELET_SOCKET}`, grpc.credentials.createInsecure()) as unknown as {
      Register(req: RegisterRequest, opts: { deadline: number }, cb: (err: Error | null) => void): void;
      close(): void;
    };
    try {
      await new Promise<void>((resolve, reject) =>
        client.Register({ version: 'v1beta1', endpoint, resourceName: options.resourceName }, { deadline: Date.now() + timeoutMs }, (err) =>
          err ? reject(new Error(`registering ${options.resourceName} with the kubelet failed: ${err.message}`)) : resolve(),
        ),
      );
    } finally {
      client.close();
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { allocations, watched: () => streams.size > 0, stop };
}

/** Whether the kubelet's registration socket takes a connection now (a stale file refuses it). */
function accepts(): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(KUBELET_SOCKET);
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(2_000, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}
