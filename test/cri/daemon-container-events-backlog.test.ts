// GetContainerEvents with a subscriber that stops reading: what waits for it is bounded, and once past
// the bound its stream ends with RESOURCE_EXHAUSTED (the kubelet then relists and resubscribes) while
// other subscribers go on receiving every event. Through the daemon's real gRPC server and middleware on
// a unix socket, with the events of a context that has no containers behind it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClientError, createChannel, createClient, Status } from 'nice-grpc';
import { type ContainerEventResponse, ContainerEventType, RuntimeServiceDefinition } from '../../proto/gen/runtime/v1/api.ts';
import type { ContainerEvent } from '../../node/skiffd/containers/manager.ts';
import type { DaemonContext } from '../../node/skiffd/context.ts';
import { createLogger } from '../../node/skiffd/logger.ts';
import { createGrpcServer } from '../../node/skiffd/server.ts';
import { getContainerEvents, SUBSCRIBER_QUEUE_MAX } from '../../node/skiffd/services/runtime/get-container-events.ts';
import { until } from '../support/wait.ts';

test('a subscriber that stops reading is ended with RESOURCE_EXHAUSTED once too far behind; the others get every event', {
  timeout: 120_000,
}, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'skiffd-events-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const lines: string[] = [];
  const log = createLogger('info', (line) => lines.push(line));
  const containers = new EventEmitter();
  const pods = new EventEmitter();
  const ctx = {
    log,
    containers: { events: containers, listByPod: () => [] },
    pods: { events: pods, get: () => undefined },
  } as unknown as DaemonContext;
  const server = createGrpcServer(log);
  const { getContainerEvents: method } = RuntimeServiceDefinition.methods;
  server.add(
    { ...RuntimeServiceDefinition, methods: { getContainerEvents: method } },
    { getContainerEvents: (request, call) => getContainerEvents(ctx, request, call) },
  );
  const socket = join(dir, 'skiffd.sock');
  await server.listen(`unix://${socket}`);
  t.after(() => server.forceShutdown());
  const channel = createChannel(`unix://${socket}`);
  t.after(() => channel.close());
  const client = createClient(RuntimeServiceDefinition, channel);

  // One subscriber reads everything; the other reads one event and then nothing.
  const abort = new AbortController();
  t.after(() => abort.abort());
  const fast: ContainerEventResponse[] = [];
  const reading = (async () => {
    for await (const e of client.getContainerEvents({}, { signal: abort.signal })) fast.push(e);
  })().catch(() => {});
  const slow = client.getContainerEvents({}, { signal: abort.signal })[Symbol.asyncIterator]();
  const first = slow.next();
  await until('both subscribers to listen', () => containers.listenerCount('event') === 2);

  // Events in batches, each waited for by the reading subscriber: only the stopped one falls behind.
  const id = (n: number) => n.toString(16).padStart(64, '0');
  const total = SUBSCRIBER_QUEUE_MAX * 10;
  let sent = 0;
  const emit = (n: number) => {
    for (const end = sent + n; sent < end; sent++) {
      const event: ContainerEvent = { containerId: id(sent), podSandboxId: id(0), type: ContainerEventType.CONTAINER_CREATED_EVENT, createdAt: BigInt(sent) };
      containers.emit('event', event);
    }
  };
  emit(1);
  assert.equal((await first).value?.containerId, id(0));
  while (sent < total) {
    emit(250);
    await until(`the reading subscriber to have ${sent} events`, () => fast.length === sent);
  }
  assert.deepEqual(
    fast.map((e) => e.containerId),
    Array.from({ length: sent }, (_, n) => id(n)),
    'every event, in order, to the subscriber that reads',
  );
  assert.equal(containers.listenerCount('event'), 1, 'the stopped subscriber was let go at once, its queue with it');
  assert.equal(pods.listenerCount('event'), 1);
  assert.ok(
    lines.some((line) => line.includes('level=warn') && line.includes('fell behind')),
    `a warning says a subscriber fell behind:\n${lines.join('')}`,
  );

  // Reading again, it gets what was already on its way (bounded), then the error.
  let more = 0;
  let error: unknown;
  try {
    for (let r = await slow.next(); !r.done; r = await slow.next()) more++;
  } catch (err) {
    error = err;
  }
  assert.ok(error instanceof ClientError, `the stream ends with a gRPC error, not ${String(error)}`);
  assert.equal(error.code, Status.RESOURCE_EXHAUSTED);
  assert.match(error.details, /fell behind/);
  assert.ok(more <= total / 2, `at most what was in flight and queued reaches it (${more} of ${total} events)`);

  // The reading subscriber is still served.
  emit(1);
  await until('the next event to the reading subscriber', () => fast.length === sent);
  abort.abort();
  await reading;
});
