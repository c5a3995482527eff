// Our proto/nri/v1alpha1/api.proto must be wire-identical to containerd/nri v0.8.0's pkg/api/api.proto
// (the fixture was extracted from Debian unstable's golang-github-containerd-nri-dev 0.8.0 once).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildDescriptorSet, wireListing } from '../support/proto-descriptor.ts';

const root = join(import.meta.dirname, '..', '..');
const buf = join(root, 'node_modules', '.bin', 'buf');
const fixture = JSON.parse(readFileSync(join(root, 'test', 'fixtures', 'nri', 'nri-v0.8.0.wire.json'), 'utf8'));

test('proto/nri/v1alpha1/api.proto is wire-identical to containerd/nri v0.8.0', () => {
  const ours = wireListing(buildDescriptorSet(buf, join(root, 'proto'), 'nri/v1alpha1/api.proto'));
  assert.equal(ours.package, 'nri.pkg.api.v1alpha1');
  assert.deepEqual(ours.services, fixture.services, 'services/methods differ');
  assert.deepEqual(ours.enums, fixture.enums, 'enums differ');
  for (const [i, m] of ours.messages.entries()) assert.deepEqual(m, fixture.messages[i], `message ${m.name} differs`);
  assert.deepEqual(ours, fixture);
});
