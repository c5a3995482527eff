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
  peerDependencies?: Record<string, string>;
};

function sourcesUnder(dir: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => join(root, dir, name));
}

/** The module specifiers a file imports or re-exports (static and dynamic). */
function importsOf(file: string): string[] {
  return importsWithKind(file).map((i) => i.specifier);
}

/** Each import with whether it is `import type` (erased: nothing of the package is loaded). */
function importsWithKind(file: string): { specifier: string; typeOnly: boolean }[] {
  const text = readFileSync(file, 'utf8');
  const found: { specifier: string; typeOnly: boolean }[] = [];
  for (const match of text.matchAll(/(?:^|\n)\s*(import|export)\b(\s+type\b)?[^'"`;]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)) {
    found.push({ specifier: match[3] ?? match[4], typeOnly: match[2] !== undefined });
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

test('src/ and node/graphql import only runtime dependencies (an optional peer only for its types)', () => {
  const files = [...sourcesUnder('src'), ...sourcesUnder('node/graphql')];
  let packages = 0;
  for (const file of files) {
    for (const { specifier, typeOnly } of importsWithKind(file)) {
      const name = packageOf(specifier);
      if (name === null) continue;
      packages++;
      if (typeOnly && name in (packageJson.peerDependencies ?? {})) continue;
      assert.ok(
        name in packageJson.dependencies,
        `${relative(root, file)} imports ${specifier}, which is ${name in packageJson.devDependencies ? 'a devDependency' : 'not a dependency'}`,
      );
    }
  }
  assert.ok(packages > 0, 'the scan found package imports at all');
});
