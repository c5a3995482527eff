// Which way imports run in src/: the handler uses execution, never the other way round, and nothing
// shipped imports a devDependency.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = join(import.meta.dirname, '..', '..');
const packageJson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

function sourcesUnder(dir: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => join(root, dir, name));
}

/** The module specifiers a file imports or re-exports (static and dynamic). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found: string[] = [];
  for (const match of text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"`;]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)) {
    found.push(match[1] ?? match[2]);
  }
  return found;
}

function packageOf(specifier: string): string | null {
  if (specifier.startsWith('.') || specifier.startsWith('node:')) return null;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
}

test('src/execution imports nothing from src/handler', () => {
  const files = sourcesUnder('src/execution');
  assert.ok(files.length > 0);
  for (const file of files) {
    for (const specifier of importsOf(file)) {
      assert.doesNotMatch(specifier, /(^|\/)handler(\/|$)/, `${relative(root, file)} imports ${specifier}`);
    }
  }
});

test('src/ and node/graphql import only runtime dependencies', () => {
  const files = [...sourcesUnder('src'), ...sourcesUnder('node/graphql')];
  let packages = 0;
  for (const file of files) {
    for (const specifier of importsOf(file)) {
      const name = packageOf(specifier);
      if (name === null) continue;
      packages++;
      assert.ok(
        name in packageJson.dependencies,
        `${relative(root, file)} imports ${specifier}, which is ${name in packageJson.devDependencies ? 'a devDependency' : 'not a dependency'}`,
      );
    }
  }
  assert.ok(packages > 0, 'the scan found package imports at all');
});
