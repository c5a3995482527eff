// Trusted documents on the edge: examples/trusted-documents/worker.ts imports its manifest as JSON,
// the edge build (scripts/build-edge.mjs's settings, platform neutral) bundles it, and the Worker
// answers ids from it under `workerd serve` with nothing read at start.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildTarget } from '../../scripts/build-edge.mjs';
import { startWorkerdServe, wranglerCompatibilityDate } from '../support/workerd-serve.ts';

const manifest = JSON.parse(await readFile(new URL('../../examples/trusted-documents/persisted-query-manifest.json', import.meta.url), 'utf8')) as {
  operations: { id: string; name: string; body: string }[];
};

test('the example Worker bundles its manifest and runs only its documents under workerd', { timeout: 180_000 }, async (t) => {
  const outdir = await mkdtemp(join(tmpdir(), 'skiff-trusted-edge-'));
  t.after(() => rm(outdir, { recursive: true, force: true }));
  const built = await buildTarget(
    { entry: 'examples/trusted-documents/worker.ts', out: 'trusted-worker.js', format: 'esm', split: false, codegen: false },
    outdir,
  );
  assert.deepEqual(built.modules, ['trusted-worker.js']);
  assert.ok((await readFile(built.file, 'utf8')).includes(manifest.operations[0].id), 'the manifest is in the bundle');

  const workerd = await startWorkerdServe({ dir: outdir, modules: built.modules }, await wranglerCompatibilityDate(), join(outdir, 'workerd'));
  t.after(() => workerd.stop());
  const post = (body: unknown) =>
    workerd.fetch('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
      body: JSON.stringify(body),
    });

  const capital = manifest.operations.find((operation) => operation.name === 'Capital')!;
  const byId = await post({ documentId: `sha256:${capital.id}`, variables: { code: 'BR' } });
  assert.equal(byId.status, 200);
  assert.deepEqual(await byId.json(), { data: { country: { name: 'Brazil', capital: 'Brasília' } } });
  const byHash = await post({ variables: { code: 'FR' }, extensions: { persistedQuery: { version: 1, sha256Hash: capital.id } } });
  assert.deepEqual(await byHash.json(), { data: { country: { name: 'France', capital: 'Paris' } } });

  const freeform = await post({ query: capital.body, variables: { code: 'BR' } });
  assert.equal(freeform.status, 400);
  assert.equal((await freeform.json()).errors[0].extensions.code, 'PERSISTED_QUERY_ID_REQUIRED');
  const unknown = await post({ documentId: `sha256:${'f'.repeat(64)}` });
  assert.equal(unknown.status, 404);
  assert.equal((await unknown.json()).errors[0].extensions.code, 'PERSISTED_QUERY_NOT_IN_LIST');
});
