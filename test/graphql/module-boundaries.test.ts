// Which way imports run in src/: the handler uses execution, never the other way round, and nothing
// shipped imports a devDependency; and across the repository no module imports itself round a circle,
// type-only imports included (shared types live a floor below the modules that share them).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const root = join(import.meta.dirname, '..', '..');
/** Circles made on purpose, for the check to find. */
const FIXTURES = join('test', 'fixtures', 'import-circle');
const packageJson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
};

/** Module files under `dir` (`.ts`, `.mts`, `.mjs`, `.js`), outside node_modules. */
function sourcesUnder(dir: string, extensions = ['.ts']): string[] {
  return readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((name) => extensions.some((ext) => name.endsWith(ext)) && !name.split(sep).includes('node_modules'))
    .map((name) => join(root, dir, name));
}

/** The module specifiers a file imports or re-exports (static and dynamic). */
function importsOf(file: string): string[] {
  return importsWithKind(file).map((i) => i.specifier);
}

/**
 * Each import with whether it is type-only (erased: nothing of the package is loaded): `import ... from`,
 * `export ... from` (`export *` and `export { .. }` included), a bare `import './x.ts'` run for its side
 * effects, and `import('...')` with a literal (a dynamic import, or a type's `typeof import(...)`).
 */
function importsWithKind(file: string): { specifier: string; typeOnly: boolean }[] {
  const text = readFileSync(file, 'utf8');
  const found: { specifier: string; typeOnly: boolean }[] = [];
  const statements =
    /(?:^|\n)\s*(import|export)\b(\s+type\b)?[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]|(?:^|\n)\s*import\s*['"]([^'"]+)['"]|\bimport\(\s*(?:'([^']+)'|"([^"]+)"|`([^`$]+)`)\s*[,)]/g;
  for (const match of text.matchAll(statements)) {
    found.push({ specifier: match[3] ?? match[4] ?? match[5] ?? match[6] ?? match[7], typeOnly: match[2] !== undefined });
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

test('src/ and node/graphql import only runtime dependencies or required peers (an optional peer only for its types)', () => {
  const files = [...sourcesUnder('src'), ...sourcesUnder('node/graphql')];
  let packages = 0;
  for (const file of files) {
    for (const { specifier, typeOnly } of importsWithKind(file)) {
      const name = packageOf(specifier);
      if (name === null) continue;
      packages++;
      const peer = name in (packageJson.peerDependencies ?? {});
      if (typeOnly && peer) continue;
      // A required peer (graphql: the app's own copy) is there at run time as much as a dependency.
      const requiredPeer = peer && packageJson.peerDependenciesMeta?.[name]?.optional !== true;
      assert.ok(
        name in packageJson.dependencies || requiredPeer,
        `${relative(root, file)} imports ${specifier}, which is ${name in packageJson.devDependencies ? 'a devDependency' : 'not a dependency'}`,
      );
    }
  }
  assert.ok(packages > 0, 'the scan found package imports at all');
});

/** Where a relative specifier from `file` lands among `files`: as written, or a `.js` name for its `.ts` source. */
function resolveImport(file: string, specifier: string, files: Set<string>): string | undefined {
  const target = resolve(dirname(file), specifier);
  return [target, target.replace(/\.js$/, '.ts'), target.replace(/\.mjs$/, '.mts')].find((t) => files.has(t));
}

/**
 * Circles of relative imports among the module files under `dirs` (every kind of import, type-only ones
 * included), each as its files in order; what lies under `except` is left out.
 */
function importCircles(dirs: string[], except: string[] = []): string[][] {
  const skipped = except.map((d) => join(root, d) + sep);
  const files = new Set(
    dirs
      .flatMap((d) => sourcesUnder(d, ['.ts', '.mts', '.mjs', '.js']))
      .filter((f) => !f.includes(`${join('proto', 'gen')}`) && !skipped.some((d) => f.startsWith(d))),
  );
  const edges = new Map<string, string[]>();
  for (const file of files) {
    const targets = importsOf(file)
      .filter((s) => s.startsWith('.'))
      .flatMap((s) => resolveImport(file, s, files) ?? []);
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

test('no circle of imports in node/, src/, edge/, bench/, examples/, test/ or scripts/', () => {
  assert.deepEqual(importCircles(['node', 'src', 'edge', 'bench', 'examples', 'test', 'scripts'], [FIXTURES]), []);
  // The check sees a circle when there is one, whatever kind of import closes it.
  const found = importCircles([FIXTURES]).map((c) => c.map((f) => relative(FIXTURES, f)).sort());
  assert.deepEqual(found.sort(), [
    ['dynamic-a.mjs', 'dynamic-b.mjs'],
    ['reexport-a.ts', 'reexport-b.ts'],
    ['side-effect-a.ts', 'side-effect-b.ts'],
    ['type-a.ts', 'type-b.ts'],
  ]);
});
