// The daemon's socket lifecycle: created 0660 (with its directory), a stale file replaced, a live
// daemon never displaced, and SIGTERM/SIGINT ending in exit 0 with the socket gone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { hermeticConfig, runSkiffd, startSkiffd, removeDaemonDir } from '../support/skiffd.ts';

function tempDir(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'skiffd-sock-'));
  t.after(() => removeDaemonDir(dir));
  return dir;
}

/** A config file that keeps the daemon off the host's CNI dir. */
function privateConfig(dir: string): string {
  const file = join(dir, 'config.toml');
  writeFileSync(file, hermeticConfig('', dir));
  return file;
}

/** Leaves a socket file nobody listens on, as a daemon killed with SIGKILL would. */
async function staleSocket(path: string): Promise<void> {
  const script = `require('net').createServer().listen(${JSON.stringify(path)}, () => process.kill(process.pid, 'SIGKILL'))`;
  const child = spawn(process.execPath, ['-e', script], { stdio: 'ignore' });
  const limit = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await new Promise((resolve) => child.once('exit', resolve));
  clearTimeout(limit);
  assert.ok(lstatSync(path).isSocket(), 'helper should leave a socket file behind');
}

test('the socket is created with mode 0660 inside a directory skiffd creates', async (t) => {
  const dir = tempDir(t);
  const socket = join(dir, 'run', 'nested', 'skiffd.sock');
  const d = await startSkiffd({ dir, socket });
  t.after(() => d.cleanup());
  const st = lstatSync(socket);
  assert.ok(st.isSocket());
  assert.equal(st.mode & 0o777, 0o660);
  assert.equal((await d.runtime.version({})).runtimeName, 'skiffd');
});

test('a stale socket file is replaced', async (t) => {
  const dir = tempDir(t);
  const socket = join(dir, 'skiffd.sock');
  await staleSocket(socket);
  const d = await startSkiffd({ dir, socket });
  t.after(() => d.cleanup());
  assert.match(d.logs(), /msg="removed stale socket"/);
  assert.equal((await d.runtime.version({})).runtimeName, 'skiffd');
});

test('a socket another daemon is serving is refused, and that daemon keeps serving', async (t) => {
  const first = await startSkiffd();
  t.after(() => first.cleanup());
  const dir = tempDir(t);
  const second = await runSkiffd([
    '--config',
    privateConfig(dir),
    '--listen',
    `unix://${first.socket}`,
    '--root',
    join(dir, 'root'),
    '--state',
    join(dir, 'state'),
  ]);
  assert.equal(second.code, 1, second.stderr);
  assert.match(second.stderr, new RegExp(`another process is already serving on ${first.socket}`));
  assert.ok(lstatSync(first.socket).isSocket());
  assert.equal((await first.runtime.version({})).runtimeName, 'skiffd');
});

test('a path that is not a socket is refused, not deleted', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'not-a-socket');
  writeFileSync(path, 'keep me');
  const run = await runSkiffd(['--config', privateConfig(dir), '--listen', path, '--root', join(dir, 'root'), '--state', join(dir, 'state')]);
  assert.equal(run.code, 1);
  assert.match(run.stderr, /exists and is not a socket/);
  assert.ok(lstatSync(path).isFile());
});

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`${signal} stops the daemon cleanly: exit 0, socket removed`, async (t) => {
    const d = await startSkiffd();
    t.after(() => d.cleanup());
    // SIGHUP first: logged and ignored, the daemon keeps serving.
    d.child.kill('SIGHUP');
    const deadline = Date.now() + 30_000;
    while (!/SIGHUP ignored/.test(d.logs()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.match(d.logs(), /level=warn msg="SIGHUP ignored/);
    assert.equal((await d.runtime.version({})).runtimeName, 'skiffd');
    d.channel.close();
    const exit = await d.stop(signal);
    assert.deepEqual(exit, { code: 0, signal: null }, d.logs());
    assert.equal(existsSync(d.socket), false, 'socket file should be gone');
    assert.match(d.logs(), new RegExp(`msg="shutting down" reason=${signal}`));
    assert.match(d.logs(), /msg=stopped/);
  });
}

test('on SIGTERM an open server stream (container events) ends cleanly instead of holding up the drain', async (t) => {
  const d = await startSkiffd();
  t.after(() => d.cleanup());
  const events = d.runtime.getContainerEvents({});
  const ended = (async () => {
    for await (const _ of events) {
      /* no containers, so no events */
    }
    return 'ended';
  })();
  // A unary call on the same connection makes sure the stream is established before the signal.
  assert.equal((await d.runtime.version({})).runtimeName, 'skiffd');
  const exit = await d.stop('SIGTERM');
  assert.deepEqual(exit, { code: 0, signal: null }, d.logs());
  assert.equal(await ended, 'ended', 'the stream completes with OK, not an error');
  assert.doesNotMatch(d.logs(), /drain timeout/);
});

test('the streaming server listens at startup: its URL is logged, and a taken port is a startup error', async (t) => {
  const d = await startSkiffd();
  t.after(() => d.cleanup());
  const listening = /msg="streaming server listening" subsystem=streaming url=http:\/\/127\.0\.0\.1:(\d+)/.exec(d.logs());
  assert.ok(listening, d.logs());

  const dir = tempDir(t);
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  t.after(() => taken.close());
  const port = (taken.address() as AddressInfo).port;
  const config = join(dir, 'config.toml');
  writeFileSync(config, hermeticConfig(`[streaming]\nport = ${port}\n`, dir));
  const run = await runSkiffd(['--config', config, '--listen', join(dir, 'skiffd.sock'), '--root', join(dir, 'root'), '--state', join(dir, 'state')]);
  assert.equal(run.code, 1, run.stderr);
  assert.match(run.stderr, new RegExp(`streaming server cannot listen on 127\\.0\\.0\\.1:${port} \\(\\[streaming\\] address/port\\)`));
});
