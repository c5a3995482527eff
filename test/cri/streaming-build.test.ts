// The builds keep attach working: dist/skiffd.cjs run by node from a directory with no
// node_modules (the SEQPACKET add-on ships beside it), and the single executable alone (the add-on
// is one of its assets), each as the runtime of a cluster node that kubectl reaches through the API server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { needs } from '../support/prereq.ts';
import { STREAMING_DAEMON_PREREQS, streamingThroughDaemon } from '../support/streaming-daemon.ts';
import { ADDON_FILE } from '../../node/skiffd/streaming/backends/seqpacket.ts';

let out: string | undefined;
let built: { cjs: string; sea?: string } | undefined;
let buildError: Error | undefined;

before(async () => {
  out = mkdtempSync(join(tmpdir(), 'skiff-strbuild-'));
  try {
    const { build } = (await import('../../scripts/build-skiffd.mjs')) as {
      build(o: { outdir: string; quiet: boolean }): Promise<{ cjs: string; sea?: string }>;
    };
    built = await build({ outdir: join(out, 'dist'), quiet: true });
  } catch (err) {
    buildError = err as Error;
  }
});

after(() => {
  if (out) rmSync(out, { recursive: true, force: true });
});

test('build: node dist/skiffd.cjs from a directory without node_modules can exec, attach and port-forward', { timeout: 180_000 }, async (t) => {
  if (!needs(t, STREAMING_DAEMON_PREREQS)) return;
  if (buildError) throw buildError;
  const addon = join(out!, 'dist', ADDON_FILE);
  assert.ok(existsSync(addon), `the build ships ${ADDON_FILE} beside skiffd.cjs`);
  const alone = mkdtempSync(join(out!, 'cjs-'));
  copyFileSync(built!.cjs, join(alone, 'skiffd.cjs'));
  copyFileSync(addon, join(alone, ADDON_FILE));
  await streamingThroughDaemon(t, [process.execPath, join(alone, 'skiffd.cjs')], alone);
});

test('build: the single executable, alone in a directory, can exec, attach and port-forward', { timeout: 180_000 }, async (t) => {
  if (!needs(t, STREAMING_DAEMON_PREREQS)) return;
  if (buildError) throw buildError;
  assert.ok(built!.sea, 'the build made a single executable');
  const alone = mkdtempSync(join(out!, 'sea-'));
  copyFileSync(built!.sea!, join(alone, 'skiffd'));
  const { chmodSync } = await import('node:fs');
  chmodSync(join(alone, 'skiffd'), 0o755);
  await streamingThroughDaemon(t, [join(alone, 'skiffd')], alone);
});
