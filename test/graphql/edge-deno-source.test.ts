// `deno task serve`: Deno running the TypeScript sources straight from the repository (node_modules
// resolved locally), with exactly the permissions the task grants.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { startDeno } from '../support/graphql-edge.ts';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

test('deno task serve answers countries queries from the sources', { timeout: 120_000 }, async (t) => {
  const config = JSON.parse(await readFile(new URL('deno.json', `file://${repoRoot}/`), 'utf8'));
  const task = config.tasks.serve;
  const words: string[] = (typeof task === 'string' ? task : task.command).trim().split(/\s+/);
  // The task names the repository's own deno by path (see its description in deno.json).
  assert.equal(words[0], './node_modules/.bin/deno');
  assert.equal(words[1], 'serve', 'the serve task runs `deno serve`');
  const deno = await startDeno(words.slice(2), { cwd: repoRoot, startupMs: 60_000 });
  t.after(() => deno.stop());

  const res = await deno.fetch('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
    body: JSON.stringify({ query: '{ country(code: "JP") { name continent { name } } }' }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  assert.deepEqual(await res.json(), { data: { country: { name: 'Japan', continent: { name: 'Asia' } } } });
  const mutation = await deno.fetch(`/graphql?query=${encodeURIComponent('{ nope }')}`);
  assert.equal(mutation.status, 200);
  assert.match((await mutation.json()).errors[0].message, /nope/);
});

test("Deno Deploy's entrypoint from deno.json starts its own server when run as `deno run` runs it", { timeout: 120_000 }, async (t) => {
  const config = JSON.parse(await readFile(new URL('deno.json', `file://${repoRoot}/`), 'utf8'));
  const runtime = config.deploy?.runtime;
  assert.equal(runtime?.type, 'dynamic');
  assert.equal(typeof runtime.entrypoint, 'string');
  // Deno Deploy runs with every permission; the install step provides node_modules.
  const deno = await startDeno(['--allow-all', runtime.entrypoint], { cwd: repoRoot, startupMs: 60_000, run: true });
  t.after(() => deno.stop());
  const res = await deno.fetch('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
    body: JSON.stringify({ query: '{ country(code: "JP") { name } }' }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  assert.deepEqual(await res.json(), { data: { country: { name: 'Japan' } } });
});
