// The GraphQL endpoint supports Node 22 as well as Node 24 (engines: >=22): every other GraphQL test
// file runs again on Node 22. .ci/run installs the official build from the npm registry and names it in
// SKIFF_NODE22; elsewhere set it to any Node 22 binary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { unavailable } from '../support/prereq.ts';

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = join(here, '..', '..');

function node22(): string | undefined {
  const candidates = [process.env.SKIFF_NODE22, '/opt/skiff-node/22/bin/node'];
  return candidates.find((bin): bin is string => !!bin && existsSync(bin));
}

test('the GraphQL tests pass on Node 22', { timeout: 15 * 60_000 }, async (t) => {
  if (process.versions.node.startsWith('22.')) {
    t.skip('this run is already on Node 22');
    return;
  }
  const bin = node22();
  if (!bin) return unavailable(t, 'no Node 22 binary: set SKIFF_NODE22 (.ci/run installs the official build from the npm registry)');
  const files = readdirSync(here)
    // graphql16.test.ts runs its own selection on graphql 16 (Node 24 is enough for that).
    .filter((f) => f.endsWith('.test.ts') && f !== basename(fileURLToPath(import.meta.url)) && f !== 'graphql16.test.ts')
    .map((f) => join(here, f));
  const result = await new Promise<{ code: number | null; output: string }>((resolve) => {
    // A run of its own, not a child of this one: the runner marks its children through NODE_TEST_CONTEXT.
    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    const child = spawn(bin, ['--import', 'tsx', '--test', '--test-reporter=spec', ...files], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d));
    child.stderr.on('data', (d: Buffer) => (output += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 14 * 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
  const version = /^v22\./;
  const failing = result.output.split('\n').filter((l) => /^\s*✖/.test(l));
  const summary = result.output.split('\n').filter((l) => /^ℹ (tests|pass|fail|skipped) /.test(l));
  console.log(`Node 22: ${summary.join(', ')}`);
  assert.ok(
    summary.some((l) => /^ℹ pass [1-9]/.test(l)),
    `no test passed on Node 22:\n${result.output.slice(-3000)}`,
  );
  assert.equal(result.code, 0, `GraphQL tests failed on Node 22:\n${failing.join('\n')}\n\n${result.output.slice(-4000)}`);
  assert.match(await versionOf(bin), version);
});

function versionOf(bin: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ['--version'], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.on('error', reject);
    child.on('close', () => resolve(out.trim()));
  });
}
