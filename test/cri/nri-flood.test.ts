// What a plugin sends cannot make skiffd's work grow faster than what it sent: a request of nearly
// ttrpc's 4 MiB limit cut into the smallest multiplexer frames is read and answered (each piece is
// kept, and the message copied once when it is whole), and skiffd goes on serving the CRI. A plugin
// that sends requests and never reads the answers is cut off once a bounded amount waits for it,
// rather than having skiffd hold every answer.
import { type TestContext, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ConfigureResponse,
  Empty,
  RegisterPluginRequest,
  SynchronizeRequest,
  SynchronizeResponse,
  UpdateContainersRequest,
  UpdateContainersResponse,
} from '../../proto/gen/nri/v1alpha1/api.ts';
import { MAX_UNSENT, Mux, PLUGIN_SERVICE_CONN, RUNTIME_SERVICE_CONN } from '../../node/skiffd/nri/wire/mux.ts';
import { Request } from '../../proto/gen/ttrpc/request.ts';
import { TtrpcEndpoint } from '../../node/skiffd/nri/wire/ttrpc.ts';
import { needs } from '../support/prereq.ts';
import { startSkiffd, type SkiffdHandle } from '../support/skiffd.ts';
import { until } from '../support/wait.ts';

const RUNTIME_SERVICE = 'nri.pkg.api.v1alpha1.Runtime';
/** Bytes of payload per multiplexer frame this plugin sends. */
const PIECE = 16;

/** Multiplexer frames of `piece` payload bytes each carrying `bytes` on `conn`, as one buffer. */
function frames(conn: number, bytes: Uint8Array, piece: number): Buffer {
  const out = Buffer.alloc(Math.ceil(bytes.length / piece) * 8 + bytes.length);
  let at = 0;
  for (let off = 0; off < bytes.length; off += piece) {
    const part = bytes.subarray(off, off + piece);
    out.writeUInt32BE(conn, at);
    out.writeUInt32BE(part.length, at + 4);
    out.set(part, at + 8);
    at += 8 + part.length;
  }
  return out;
}

/** skiffd with its NRI socket in a fresh directory, and a plugin connection registered as 40-`name`. */
async function connected(t: TestContext, name: string): Promise<{ d: SkiffdHandle; socket: Socket; mux: Mux; client: TtrpcEndpoint }> {
  const dir = mkdtempSync(join(tmpdir(), 'skiff-nri-flood-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const socketPath = join(dir, 'nri', 'nri.sock');
  const d = await startSkiffd({ config: `[nri]\nsocket_path = ${JSON.stringify(socketPath)}\nplugin_path = ${JSON.stringify(join(dir, 'plugins'))}\n` });
  t.after(() => d.cleanup());
  const socket = connect(socketPath);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  t.after(() => socket.destroy());
  const mux = new Mux(socket);
  const pluginConn = mux.open(PLUGIN_SERVICE_CONN, (data) => server.receive(data));
  const runtimeConn = mux.open(RUNTIME_SERVICE_CONN, (data) => client.receive(data));
  // The plugin's side of the protocol: configured (all events), synchronized (no changes).
  const server: TtrpcEndpoint = new TtrpcEndpoint(
    (b) => pluginConn.write(b),
    () => mux.close(),
    async (_service, method, payload) => {
      if (method === 'Configure') return ConfigureResponse.encode({ events: 0 }).finish();
      if (method === 'Synchronize') return SynchronizeResponse.encode({ update: [], more: SynchronizeRequest.decode(payload).more }).finish();
      return Empty.encode({}).finish();
    },
  );
  // Large requests go out in PIECE-byte frames, as one write so that the test's own cost stays small.
  const client: TtrpcEndpoint = new TtrpcEndpoint(
    (b) => (b.length > 1024 ? socket.write(frames(RUNTIME_SERVICE_CONN, b, PIECE)) : runtimeConn.write(b)),
    () => mux.close(),
  );
  await client.call(RUNTIME_SERVICE, 'RegisterPlugin', RegisterPluginRequest.encode({ pluginName: name, pluginIdx: '40' }).finish(), 30_000);
  await until(`skiffd to take plugin 40-${name}`, () => new RegExp(`NRI plugin connected and synchronized.* plugin=40-${name}`).test(d.logs()), 30_000);
  return { d, socket, mux, client };
}

test('NRI: a plugin sending a large request in tiny frames is answered, and skiffd goes on serving', { timeout: 300_000 }, async (t) => {
  if (!needs(t, { root: true })) return;
  const { d, client } = await connected(t, 'tiny-frames');
  // An eviction of a container that does not exist, with a reason that fills the message.
  const reason = 'x'.repeat(4 * 1024 * 1024 - 1024);
  const request = UpdateContainersRequest.encode({ update: [], evict: [{ containerId: 'absent', reason }] }).finish();
  // The bound is a hang check: a reading that copies all it holds at each piece takes hours here.
  const reply = await client.call(RUNTIME_SERVICE, 'UpdateContainers', request, 120_000);
  assert.deepEqual(UpdateContainersResponse.decode(reply).failed, []);
  assert.ok((await d.runtime.version({})).runtimeName);
  assert.doesNotMatch(d.logs(), /connection to plugin closed.* plugin=40-tiny-frames/);
});

test('NRI: a plugin that never reads its answers is cut off, and skiffd goes on serving', { timeout: 300_000 }, async (t) => {
  if (!needs(t, { root: true })) return;
  const { d, socket } = await connected(t, 'never-reads');
  // From here on nothing is read; each request names a method of 1 MiB, which the refusal repeats.
  socket.pause();
  const method = 'm'.repeat(1024 * 1024);
  const requests = Math.ceil((2 * MAX_UNSENT) / method.length);
  for (let i = 0; i < requests; i++) {
    const body = Request.encode({ service: RUNTIME_SERVICE, method, payload: Buffer.alloc(0), timeoutNano: 0n, metadata: [] }).finish();
    const header = Buffer.alloc(10);
    header.writeUInt32BE(body.length, 0);
    header.writeUInt32BE(101 + 2 * i, 4); // client streams: odd, increasing
    header[8] = 1; // request
    header[9] = 1; // remote closed
    socket.write(frames(RUNTIME_SERVICE_CONN, Buffer.concat([header, body]), 4096));
  }
  await until(
    'skiffd to cut off the plugin that does not read',
    () => /connection to plugin closed.* plugin=40-never-reads reason="the peer does not read/.test(d.logs()),
    60_000,
  );
  assert.ok((await d.runtime.version({})).runtimeName);
});
