// skiffd stops on SIGTERM while NRI plugins are connected to its socket: a registered one (the
// field's sample logger) and one that connected but has not registered yet. Both lose their
// connection, and the logger exits on its own as plugins on containerd/nri's stub do.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nriSamplePath, nriSamplesMissing, pluginSynchronized, runExternalPlugin } from '../support/nri.ts';
import { connectTestPlugin } from '../support/nri-test-plugin.ts';
import { needs, unavailable } from '../support/prereq.ts';
import { startSkiffd } from '../support/skiffd.ts';
import { until } from '../support/wait.ts';

test('NRI: skiffd stops on SIGTERM with plugins connected, and they see the connection close', { timeout: 120_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['runc', 'conmon', 'unshare'] })) return;
  const missing = nriSamplesMissing();
  if (missing) return unavailable(t, missing);
  // Long enough that the registration timeout cannot be what closes the unregistered connection.
  const dir = mkdtempSync(join(tmpdir(), 'skiff-nri-stop-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const socketDir = join(dir, 'nri');
  const d = await startSkiffd({
    config: `[nri]\nsocket_path = ${JSON.stringify(join(socketDir, 'nri.sock'))}\nplugin_path = ${JSON.stringify(join(dir, 'plugins'))}\nplugin_registration_timeout = "5m"\n`,
  });
  t.after(() => d.cleanup());
  const logger = runExternalPlugin(socketDir, [nriSamplePath('logger'), '-idx', '10', '-name', 'logger']);
  t.after(() => logger.stop());
  await pluginSynchronized(logger, '10-logger', d.logs);
  const silent = await connectTestPlugin(join(socketDir, 'nri.sock'), { idx: '20', name: 'silent', neverRegister: true });
  t.after(() => silent.close());
  let silentClosed = false;
  void silent.closed.then(() => (silentClosed = true));

  const exit = await d.stop('SIGTERM', 30_000);
  assert.deepEqual(exit, { code: 0, signal: null }, `skiffd's log:\n${d.logs().slice(-3000)}`);
  await until('the unregistered plugin to see its connection closed', () => silentClosed, 10_000);
  await until('the logger to exit on losing its runtime', () => logger.child.exitCode !== null, 30_000);
});
