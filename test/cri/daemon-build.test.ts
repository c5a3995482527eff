// The shipped forms of skiffd: dist/skiffd.cjs (one file, runs with plain node and no node_modules)
// and dist/skiffd (a Node single executable). Built into a temp dir so the repo's dist/ is untouched.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { addonFileName, build } from '../../scripts/build-skiffd.mjs';
import { runSkiffd, startSkiffd } from '../support/skiffd.ts';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));

test('built skiffd: the bundle and the single executable both serve the CRI', async (t) => {
  const out = mkdtempSync(join(tmpdir(), 'skiffd-build-'));
  t.after(() => rmSync(out, { recursive: true, force: true }));
  const built = await build({ outdir: out, quiet: true });
  // On x64 npm ci installs the attach add-on, so the build ships it and says nothing.
  if (process.arch === 'x64') {
    assert.ok(built.addon && existsSync(join(out, addonFileName())), 'the attach add-on is shipped beside skiffd.cjs');
    assert.deepEqual(built.warnings, []);
  }

  await t.test('dist/skiffd.cjs runs from a directory without node_modules', async () => {
    // A bare directory under /tmp: no node_modules here or in any parent.
    const bare = mkdtempSync(join(tmpdir(), 'skiffd-bare-'));
    t.after(() => rmSync(bare, { recursive: true, force: true }));
    copyFileSync(built.cjs, join(bare, 'skiffd.cjs'));
    assert.equal(existsSync(join(bare, 'node_modules')), false);
    const command = [process.execPath, join(bare, 'skiffd.cjs')];

    const help = await runSkiffd(['--help'], { command, cwd: bare });
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /--listen URL/);

    const d = await startSkiffd({ command, cwd: bare });
    t.after(() => d.cleanup());
    const v = await d.runtime.version({});
    assert.equal(v.runtimeName, 'skiffd');
    assert.equal(v.runtimeVersion, pkg.version);
    assert.deepEqual(await d.stop(), { code: 0, signal: null });
  });

  await t.test('dist/skiffd (single executable) prints --version and answers Version', async () => {
    assert.ok(built.sea, 'the SEA binary was built');
    const command = [built.sea];
    const version = await runSkiffd(['--version'], { command, cwd: out });
    assert.equal(version.code, 0, version.stderr);
    assert.match(version.stdout, new RegExp(`^skiffd ${pkg.version.replace(/\./g, '\\.')} `));
    assert.equal(version.stderr, '', 'no experimental-feature warning on stderr');

    const d = await startSkiffd({ command, cwd: out });
    t.after(() => d.cleanup());
    assert.equal((await d.runtime.version({})).runtimeName, 'skiffd');
    // The add-on ships with the build: attach is available, so no start-up warning.
    if (built.addon) assert.doesNotMatch(d.logs(), /attach is not available/);
    assert.deepEqual(await d.stop(), { code: 0, signal: null });
  });
});
