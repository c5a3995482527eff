// Our proto/runtime/v1/api.proto must be wire-identical to cri-api v0.36.3 (the fixture was extracted
// from upstream once), and the committed TypeScript must be what the generator makes from it today.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { create, createFileRegistry, fromBinary, toBinary, type DescMessage } from '@bufbuild/protobuf';
import { FileDescriptorSetSchema } from '@bufbuild/protobuf/wkt';
import { buildDescriptorSet, wireListing } from '../support/proto-descriptor.ts';
import { ContainerStatus, ContainerState, ImageServiceDefinition, RuntimeServiceDefinition, Signal } from '../../proto/gen/runtime/v1/api.ts';

const root = join(import.meta.dirname, '..', '..');
const buf = join(root, 'node_modules', '.bin', 'buf');
const fixture = JSON.parse(readFileSync(join(root, 'test', 'fixtures', 'cri', 'cri-api-v0.36.3.wire.json'), 'utf8'));

const ourSet = buildDescriptorSet(buf, join(root, 'proto'), 'runtime/v1/api.proto');

test('proto/runtime/v1/api.proto is wire-identical to cri-api v0.36.3', () => {
  const ours = wireListing(ourSet);
  // Compare the parts separately first so a failure names what drifted.
  assert.deepEqual(ours.services, fixture.services, 'services/methods differ');
  assert.deepEqual(ours.enums, fixture.enums, 'top-level enums differ');
  assert.deepEqual(
    ours.messages.map((m) => m.name),
    fixture.messages.map((m: { name: string }) => m.name),
    'message set differs',
  );
  for (const [i, m] of ours.messages.entries()) assert.deepEqual(m, fixture.messages[i], `message ${m.name} differs`);
  assert.deepEqual(ours, fixture);
  assert.equal(
    fixture.services.reduce((n: number, s: { methods: unknown[] }) => n + s.methods.length, 0),
    41,
  );
});

test('generated nice-grpc definitions carry every RPC with its streaming shape', () => {
  const defs = { RuntimeService: RuntimeServiceDefinition, ImageService: ImageServiceDefinition };
  for (const service of fixture.services as {
    name: 'RuntimeService' | 'ImageService';
    methods: { name: string; clientStreaming: boolean; serverStreaming: boolean }[];
  }[]) {
    const def = defs[service.name];
    assert.equal(def.fullName, `runtime.v1.${service.name}`);
    const generated = Object.values(def.methods).map((m) => ({ name: m.name, clientStreaming: m.requestStream, serverStreaming: m.responseStream }));
    assert.deepEqual(
      generated,
      service.methods.map(({ name, clientStreaming, serverStreaming }) => ({ name, clientStreaming, serverStreaming })),
    );
  }
});

test('int64 nanosecond timestamps survive a round trip through an independent decoder', () => {
  // 2026-01-01T00:00:00.123456789Z in ns exceeds 2^53; a number would round it.
  const createdAt = 1767225600123456789n;
  const bytes = ContainerStatus.encode(
    ContainerStatus.fromPartial({ id: 'abc', state: ContainerState.CONTAINER_EXITED, createdAt, exitCode: -1, stopSignal: Signal.SIGTERM, labels: { a: 'b' } }),
  ).finish();
  const registry = createFileRegistry(fromBinary(FileDescriptorSetSchema, ourSet));
  const desc = registry.getMessage('runtime.v1.ContainerStatus') as DescMessage;
  const decoded = fromBinary(desc, bytes) as unknown as Record<string, unknown>;
  assert.equal(decoded.createdAt, createdAt);
  assert.equal(decoded.exitCode, -1);
  assert.equal(decoded.state, 2);
  assert.equal(decoded.stopSignal, 23);
  assert.deepEqual(decoded.labels, { a: 'b' });
  // ...and the other way round.
  const back = ContainerStatus.decode(toBinary(desc, create(desc, { id: 'x', finishedAt: createdAt + 1n } as never)));
  assert.equal(back.finishedAt, createdAt + 1n);
});

test('committed proto/gen/runtime/v1/api.ts is what `npm run gen:proto` produces', () => {
  const out = execFileSync(process.execPath, [join(root, 'scripts', 'gen-proto.mjs'), '--check'], { encoding: 'utf8', timeout: 60_000 });
  assert.match(out, /up to date/);
});
