// The NRI socket is root's alone: whoever connects can change every container (mounts, hooks,
// devices). skiffd makes it 0600 whatever umask it was started with, makes its directory 0700, and
// refuses a directory another user owns or one that is a symbolic link.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nriSamplePath, nriSamplesMissing, pluginSynchronized, runExternalPlugin } from '../support/nri.ts';
import { needs, unavailable } from '../support/prereq.ts';
import { skiffdCommand, startSkiffd } from '../support/skiffd.ts';
import { until } from '../support/wait.ts';

const NOBODY = 65534;

test('NRI: the socket is root-only whatever the umask, and its directory must be ours', { timeout: 300_000 }, async (t) => {
  if (!needs(t, { root: true, commands: ['unshare', 'setpriv'] })) return;
  const missing = nriSamplesMissing();
  if (missing) return unavailable(t, missing);
  const dir = mkdtempSync(join(tmpdir(), 'skiff-nri-socket-'));
  chmodSync(dir, 0o711);
  t.after(() => rmSync(dir, { recursive: true, force: true }));

  /** skiffd with its NRI socket at `socket` exits at start-up with `message`; one that starts anyway is stopped. */
  const refusedToStart = async (socket: string, message: RegExp) => {
    const started = await startSkiffd({
      config: `[nri]\nsocket_path = ${JSON.stringify(socket)}\nplugin_path = ${JSON.stringify(join(dir, 'plugins'))}\n`,
    }).catch((err: Error) => err);
    if (!(started instanceof Error)) {
      await started.cleanup();
      assert.fail(`skiffd started with its NRI socket at ${socket}`);
    }
    assert.match(started.message, message);
  };

  await t.test('started under umask 000 with a socket directory others can enter: another user cannot connect, root can', async (s) => {
    // As /run/nri may already be, made by something else: root's, but open to others.
    const socketDir = join(dir, 'open');
    mkdirSync(socketDir, { mode: 0o755 });
    chmodSync(socketDir, 0o755);
    const socket = join(socketDir, 'nri.sock');
    const d = await startSkiffd({
      command: ['sh', '-c', 'umask 000 && exec "$@"', 'sh', ...skiffdCommand()],
      config: `[nri]\nsocket_path = ${JSON.stringify(socket)}\nplugin_path = ${JSON.stringify(join(dir, 'plugins'))}\n`,
    });
    s.after(() => d.cleanup());
    const st = statSync(socket);
    assert.ok(st.isSocket());
    assert.equal(st.uid, 0);
    assert.equal((st.mode & 0o777).toString(8), '600');
    assert.equal((statSync(socketDir).mode & 0o777).toString(8), '700');

    // The field's own plugin, run as nobody, is turned away by the kernel.
    const intruder = runExternalPlugin(socketDir, [
      'setpriv',
      `--reuid=${NOBODY}`,
      `--regid=${NOBODY}`,
      '--clear-groups',
      '--',
      nriSamplePath('logger'),
      '-idx',
      '10',
      '-name',
      'intruder',
    ]);
    s.after(() => intruder.stop());
    await until(
      'the unprivileged plugin to give up',
      () => {
        if (/plugin=10-intruder/.test(d.logs())) throw new Error(`skiffd took a plugin run by uid ${NOBODY}:\n${d.logs()}`);
        return intruder.child.exitCode !== null;
      },
      30_000,
    );
    assert.notEqual(intruder.child.exitCode, 0);
    assert.match(intruder.output(), /permission denied/i);
    assert.doesNotMatch(d.logs(), /plugin=10-intruder/);

    // Root's is taken.
    const logger = runExternalPlugin(socketDir, [nriSamplePath('logger'), '-idx', '10', '-name', 'root-logger']);
    s.after(() => logger.stop());
    await pluginSynchronized(logger, '10-root-logger', d.logs);
  });

  await t.test('a socket directory another user owns is refused at start-up, naming it', async () => {
    const socketDir = join(dir, 'planted');
    mkdirSync(socketDir, { mode: 0o700 });
    chownSync(socketDir, NOBODY, NOBODY);
    await refusedToStart(join(socketDir, 'nri.sock'), new RegExp(`NRI socket directory ${socketDir} is owned by uid ${NOBODY}`));
  });

  await t.test('a socket directory that is a symbolic link is refused at start-up', async () => {
    const target = join(dir, 'elsewhere');
    mkdirSync(target, { mode: 0o700 });
    const link = join(dir, 'link');
    symlinkSync(target, link);
    await refusedToStart(join(link, 'nri.sock'), new RegExp(`NRI socket directory ${link} is a symbolic link`));
  });
});
