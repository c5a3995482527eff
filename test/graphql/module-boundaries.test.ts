// Which way imports run in src/: the handler uses execution, never the other way round, and nothing
// shipped imports a devDependency; and across the repository no module imports itself round a circle,
// type-only imports included (shared types live a floor below the modules that share them).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

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

/** Circles of relative imports among the TypeScript files under `dirs`, each as its files in order. */
function importCircles(dirs: string[]): string[][] {
  const files = new Set(dirs.flatMap((d) => sourcesUnder(d)).filter((f) => !f.includes(`${join('proto', 'gen')}`)));
  const edges = new Map<string, string[]>();
  for (const file of files) {
    const targets = importsOf(file)
      .filter((s) => s.startsWith('.'))
      .map((s) => resolve(dirname(file), s))
      .filter((t) => files.has(t));
    edges.set(file, targets);
  }
  const circles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    path.push(file);
    for (const next of edges.get(file) ?? []) {
      if (state.get(next) === 'open') circles.push(path.slice(path.indexOf(next)).map((f) => relative(root, f)));
      else if (!state.has(next)) visit(next);
    }
    path.pop();
    state.set(file, 'done');
  };
  for (const file of files) if (!state.has(file)) visit(file);
  return circles;
}

test('no circle of imports in node/, src/, edge/ or bench/', () => {
  assert.deepEqual(importCircles(['node', 'src', 'edge', 'bench', 'examples']), []);
  // The check sees a circle when there is one.
  assert.ok(importCircles(['test/fixtures/import-circle']).length === 1, 'the fixture circle (a.ts -> b.ts -> a.ts, type-only) is found');
});
