// The documented local runs, as a developer types them after `npm ci`: `npx deno task serve` (deno
// only in node_modules/.bin) on an address of their choosing, and `npm run serve:workerd` on the
// built Worker. Each answers a countries query like the in-process handler.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from '../../scripts/build-edge.mjs';
import countries from '../../src/index.ts';
import { within } from '../fixtures/ws/clients.ts';
import { killGroup } from '../fixtures/ws/runtimes.ts';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const query = `/graphql?query=${encodeURIComponent('{ country(code: "NO") { name capital languages { code } } }')}`;

/** Runs `command` in its own process group until `ready` matches its output; returns the match. */
async function run(t: { after: (fn: () => void) => void }, command: string, args: string[], env: Record<string, string>, ready: RegExp) {
  // PATH without node_modules/.bin: npx and npm have to find the repository's own binaries.
  const path = (process.env.PATH ?? '')
    .split(':')
    .filter((dir) => !dir.includes('node_modules'))
    .join(':');
  const child = spawn(command, args, {
    cwd: repoRoot,
    env: { ...process.env, PATH: path, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  t.after(() => killGroup(child.pid, 'SIGKILL'));
  let output = '';
  return within(
    new Promise<RegExpExecArray>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        const match = ready.exec(output);
        if (match) resolve(match);
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.once('exit', (code) => reject(new Error(`${command} ${args.join(' ')} exited with ${code}:\n${output}`)));
    }),
    60_000,
    `${command} ${args.join(' ')} to listen`,
  );
}

async function answersLikeInProcess(origin: string): Promise<void> {
  const expected = await countries.fetch(new Request(`http://localhost${query}`));
  const actual = await within(fetch(new URL(query, origin)), 15_000, 'an answer');
  assert.equal(actual.status, 200);
  assert.equal(await actual.text(), await expected.text());
}

test('npx deno task serve: Deno from node_modules serves the sources on the address DENO_SERVE_ADDRESS picks', { timeout: 120_000 }, async (t) => {
  const [, origin] = await run(
    t,
    'npx',
    ['--no-install', 'deno', 'task', 'serve'],
    { DENO_SERVE_ADDRESS: 'tcp:127.0.0.1:0' },
    /Listening on (http:\/\/127\.0\.0\.1:\d+)\//,
  );
  assert.notEqual(new URL(origin).port, '8000');
  await answersLikeInProcess(origin);
});

test('npm run serve:workerd: the built Worker on a local workerd, on PORT', { timeout: 120_000 }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'skiff-workerd-local-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await build({ outdir: dir, quiet: true });
  const [, url] = await run(
    t,
    'npm',
    ['run', '--silent', 'serve:workerd', '--', join(dir, 'workerd.js')],
    { PORT: '0' },
    /workerd serving \S+ at (http:\/\/\S+\/graphql)/,
  );
  await answersLikeInProcess(new URL(url).origin);
});
