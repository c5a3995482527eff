// The endpoint supports graphql 16 as well as 17 (peer dependency `^16.15 || ^17`; the repository
// installs 17): the GraphQL tests that cover what differs between them run again with graphql 16 as
// the only graphql. They run in a copy of the repository whose node_modules is this one's (hard links
// where the file system allows) with `graphql` replaced by the `graphql-16` alias install, so every
// importer (our code, graphql-ws, esbuild bundles, Deno, workerd, Bun) finds 16. The copy of
// node_modules is kept in the temp dir and rebuilt when package-lock.json changes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { cp, lstat, mkdir, readdir, readFile, realpath, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { unavailable } from '../support/prereq.ts';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = join(here, '..', '..');

/** What differs between graphql 16 and 17 is covered by these: execution, incremental delivery, transports, audits, runtimes. */
const files = [
  'audit-handler',
  'audit-dev-server',
  'countries-schema',
  'countries-resolvers',
  'execution-equivalence',
  'execution-bounds',
  'incremental-executor',
  'incremental-delivery',
  'http-handler',
  'handler-hot-path',
  'handler-on-demand',
  'features-limits',
  'features-persisted-queries',
  'features-security',
  'streams-handler',
  'streams-clients',
  'streams-deno',
  'streams-workerd',
  'streams-bun',
  'streams-edge-runtime',
  'subscriptions-node',
  'subscriptions-countries',
  'bench-servers',
].map((name) => `test/graphql/${name}.test.ts`);

/** The copy of the repository on graphql 16, its node_modules rebuilt when the lock file changes. */
async function graphql16Checkout(): Promise<string> {
  const lock = createHash('sha256')
    .update(readFileSync(join(repoRoot, 'package-lock.json')))
    .digest('hex')
    .slice(0, 16);
  const root = join(tmpdir(), 'skiff-graphql16');
  const checkout = join(root, lock);
  const modules = join(checkout, 'node_modules');
  if (!existsSync(join(modules, '.skiff-graphql16'))) {
    await rm(root, { recursive: true, force: true });
    await mkdir(checkout, { recursive: true });
    const staging = join(checkout, 'node_modules.partial');
    // The directory itself: in a worktree node_modules may be a symlink to another checkout's, which cp
    // would copy as the link, so that replacing graphql below replaced it in that checkout.
    const installed = await realpath(join(repoRoot, 'node_modules'));
    // Hard links: seconds and no space on the same file system; a copy elsewhere.
    await promisify(execFile)('cp', ['-al', installed, staging]).catch(() => cp(installed, staging, { recursive: true, verbatimSymlinks: true }));
    assert.ok(!(await lstat(staging)).isSymbolicLink(), 'the copy of node_modules is a directory of its own');
    await rm(join(staging, 'graphql'), { recursive: true, force: true });
    await cp(join(installed, 'graphql-16'), join(staging, 'graphql'), { recursive: true });
    await writeFile(join(staging, '.skiff-graphql16'), 'graphql 16 in place of 17\n');
    await rename(staging, modules);
  }
  // The sources fresh every run (a few MB): everything but node_modules, .git and build output.
  for (const entry of await readdir(repoRoot)) {
    if (entry === 'node_modules' || entry === '.git' || entry === 'dist') continue;
    await rm(join(checkout, entry), { recursive: true, force: true });
    await cp(join(repoRoot, entry), join(checkout, entry), { recursive: true, verbatimSymlinks: true });
  }
  return checkout;
}

test('the GraphQL tests that cover graphql-js pass on graphql 16', { timeout: 20 * 60_000 }, async (t) => {
  if (!existsSync(join(repoRoot, 'node_modules', 'graphql-16', 'package.json'))) {
    return unavailable(t, 'no graphql 16 install: run npm ci (package.json has it as the graphql-16 alias)');
  }
  const checkout = await graphql16Checkout();
  const installed = JSON.parse(await readFile(join(checkout, 'node_modules', 'graphql', 'package.json'), 'utf8')) as { version: string };
  assert.match(installed.version, /^16\./);
  const result = await new Promise<{ code: number | null; output: string }>((resolve) => {
    // A run of its own, not a child of this one: the runner marks its children through NODE_TEST_CONTEXT.
    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', ...files], {
      cwd: checkout,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d));
    child.stderr.on('data', (d: Buffer) => (output += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 19 * 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
  const failing = result.output.split('\n').filter((l) => /^\s*✖/.test(l));
  const summary = result.output.split('\n').filter((l) => /^ℹ (tests|pass|fail|skipped) /.test(l));
  console.log(`graphql ${installed.version}: ${summary.join(', ')}`);
  assert.ok(
    summary.some((l) => /^ℹ pass [1-9]/.test(l)),
    `no test passed on graphql 16:\n${result.output.slice(-3000)}`,
  );
  assert.equal(result.code, 0, `GraphQL tests failed on graphql 16:\n${failing.join('\n')}\n\n${result.output.slice(-4000)}`);
});
