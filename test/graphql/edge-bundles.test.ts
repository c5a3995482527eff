// The built edge bundles answering real countries queries on Node, Deno, Bun, workerd and Vercel's
// edge-runtime, byte for byte like the in-process handler.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, posix, sep } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { pathToFileURL } from 'node:url';
import { build, type BundleSize } from '../../scripts/build-edge.mjs';
import countries from '../../src/index.ts';
import { countriesSubgraphSDL, dataset, LOCALES } from '../../src/countries/index.ts';
import { startBun, startDeno, startEdgeRuntime, startWorkerd, type FetchFn } from '../support/graphql-edge.ts';
import { startWorkerdServe } from '../support/workerd-serve.ts';

const gqlResponse = 'application/graphql-response+json';
const json = { 'content-type': 'application/json' };

interface Case {
  name: string;
  path: string;
  init?: RequestInit;
  /** Extra facts to assert on the parsed body, beyond matching the in-process answer. */
  check?: (body: any) => void;
  /** The same for a body that is no JSON document (a stream). */
  checkText?: (text: string) => void;
}

const q1 = '{ country(code: "BR") { name capital currency languages { name } } }';
const wholeDatasetQuery = `{
  countries {
    awsRegion capital code continent { code name } currencies currency emoji emojiU
    languages { code name native rtl } name native phone phones
    states { code name country { code } } subdivisions { code emoji name }
    ${LOCALES.map((lang) => `name_${lang}: name(lang: "${lang}")`).join(' ')}
  }
  continents { code name countries { code } }
  languages { code name native rtl countries { code } }
}`;
const cases: Case[] = [
  {
    name: 'Q1 over POST',
    path: '/graphql',
    init: { method: 'POST', headers: { ...json, accept: gqlResponse }, body: JSON.stringify({ query: q1 }) },
    check: (body) => {
      assert.deepEqual(Object.keys(body.data.country), ['name', 'capital', 'currency', 'languages']);
      assert.equal(body.data.country.name, 'Brazil');
      assert.equal(body.data.country.capital, 'Brasília');
      assert.equal(body.data.country.currency, 'BRL');
      assert.deepEqual(body.data.country.languages, [{ name: 'Portuguese' }]);
    },
  },
  { name: 'Q1 over GET', path: `/graphql?query=${encodeURIComponent(q1)}` },
  {
    name: 'a name regex filter',
    path: '/graphql',
    init: {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ query: '{ countries(filter: { name: { regex: "^United" } }) { code } }' }),
    },
    check: (body) => assert.deepEqual(body.data.countries.map((c: { code: string }) => c.code).sort(), ['AE', 'GB', 'US']),
  },
  {
    name: 'variables and operationName',
    path: '/graphql',
    init: {
      method: 'POST',
      headers: json,
      body: JSON.stringify({
        query: 'query Other { continents { code } } query Pick($codes: [String!]) { countries(filter: { code: { in: $codes } }) { code continent { code } } }',
        operationName: 'Pick',
        variables: { codes: ['JP', 'FR'] },
      }),
    },
    check: (body) => {
      const byCode = Object.fromEntries(body.data.countries.map((c: any) => [c.code, c.continent.code]));
      assert.deepEqual(byCode, { FR: 'EU', JP: 'AS' });
    },
  },
  {
    name: 'a validation error under graphql-response+json',
    path: '/graphql',
    init: { method: 'POST', headers: { ...json, accept: gqlResponse }, body: JSON.stringify({ query: '{ planets { name } }' }) },
    check: (body) => assert.match(body.errors[0].message, /planets/),
  },
  { name: 'another path', path: '/elsewhere' },
  {
    // The bundles decode the dataset table by table on first read: every table, every field.
    name: 'the whole dataset, every field and every name(lang:)',
    path: '/graphql',
    init: { method: 'POST', headers: json, body: JSON.stringify({ query: wholeDatasetQuery }) },
    check: (body) => {
      assert.equal(body.errors, undefined);
      assert.equal(body.data.countries.length, dataset.countries.length);
      assert.equal(body.data.languages.length, dataset.languages.length);
      assert.equal(body.data.continents.length, dataset.continents.length);
      const gb = body.data.countries.find((c: { code: string }) => c.code === 'GB');
      assert.ok(gb.states.length > 0 && gb.subdivisions.some((s: { emoji: string | null }) => s.emoji !== null));
      assert.equal(gb.name_de, 'Vereinigtes Königreich');
      assert.equal(gb.name_ja, 'イギリス');
    },
  },
  {
    // graphql-sse's client asks for nothing but a stream, queries included.
    name: 'a query to a client that accepts only server-sent events',
    path: '/graphql',
    init: { method: 'POST', headers: { ...json, accept: 'text/event-stream' }, body: JSON.stringify({ query: '{ country(code: "FR") { name } }' }) },
    checkText: (text) => assert.equal(text, ':\n\nevent: next\ndata: {"data":{"country":{"name":"France"}}}\n\nevent: complete\ndata:\n\n'),
  },
  {
    // Apollo Client's Accept for a query: the deferred field comes in a part of its own.
    name: '@defer to a multipart client',
    path: '/graphql',
    init: {
      method: 'POST',
      headers: { ...json, accept: 'multipart/mixed;deferSpec=20220824, application/json' },
      body: JSON.stringify({ query: '{ country(code: "FR") { name ... @defer { capital } } }' }),
    },
    checkText: (text) => {
      const part = 'content-type: application/json; charset=utf-8\r\n\r\n';
      assert.equal(
        text,
        `\r\n---\r\n${part}{"data":{"country":{"name":"France"}},"hasNext":true}\r\n---\r\n${part}{"incremental":[{"data":{"capital":"Paris"},"path":["country"]}],"hasNext":false}\r\n-----\r\n`,
      );
    },
  },
  {
    name: 'the subgraph SDL',
    path: '/graphql',
    init: { method: 'POST', headers: json, body: JSON.stringify({ query: '{ _service { sdl } }' }) },
    check: (body) => assert.equal(body.data._service.sdl, countriesSubgraphSDL),
  },
];

/**
 * Runs every case against `fetchFn` and compares with the in-process handler. The Vercel entries
 * answer on any path (Vercel routes by file), so there the other-path case is left out.
 */
async function answersLikeNode(fetchFn: FetchFn, options: { anyPath?: boolean } = {}) {
  for (const c of cases) {
    if (options.anyPath && c.path === '/elsewhere') continue;
    const expected = await countries.fetch(new Request(`http://localhost${c.path}`, c.init));
    const expectedText = await expected.text();
    const actual = await fetchFn(c.path, c.init);
    const actualText = await actual.text();
    assert.equal(actual.status, expected.status, c.name);
    assert.equal(actual.headers.get('content-type'), expected.headers.get('content-type'), c.name);
    assert.equal(actualText, expectedText, c.name);
    if (c.checkText) c.checkText(actualText);
    else c.check?.(JSON.parse(actualText));
  }
}

interface WranglerConfig {
  main: string;
  compatibility_date: string;
  base_dir?: string;
  find_additional_modules?: boolean;
  rules?: { type: string; globs: string[] }[];
}

async function wranglerConfig(): Promise<WranglerConfig> {
  return parseToml(await readFile(new URL('../../wrangler.toml', import.meta.url), 'utf8')) as unknown as WranglerConfig;
}

/** A module-rule glob as wrangler reads it: `*` within a path segment, `**` across them. */
function globPattern(glob: string): RegExp {
  const source = glob
    .split('/')
    .map((part) => (part === '**' ? '(?:.*/)?' : `${part.replace(/[.+^${}()|[\]\\]/g, '\\$&').replaceAll('*', '[^/]*')}/`))
    .join('')
    .replace(/\/$/, '')
    .replaceAll('(?:.*/)?/', '(?:.*/)?');
  return new RegExp(`^${source}$`);
}

describe('edge bundles', { timeout: 180_000 }, () => {
  let outdir = '';
  let sizes: BundleSize[] = [];
  const bundle = (name: string) => join(outdir, name);

  before(
    async () => {
      outdir = await mkdtemp(join(tmpdir(), 'skiff-edge-'));
      sizes = await build({ outdir, quiet: true });
    },
    { timeout: 60_000 },
  );
  after(() => rm(outdir, { recursive: true, force: true }));

  test('the build writes a minified bundle per target that imports nothing but its own chunks', { timeout: 120_000 }, async () => {
    assert.deepEqual(sizes.map((s) => s.name).sort(), ['bun.js', 'deno.js', 'graphql.js', 'vercel-edge-runtime.js', 'vercel.js', 'workerd.js']);
    for (const s of sizes) {
      assert.equal(s.modules[0], s.name, `${s.name}: the entry comes first`);
      const imports = new Map<string, { static: string[]; dynamic: string[] }>();
      for (const module of s.modules) {
        const code = await readFile(join(outdir, module), 'utf8');
        const dir = posix.dirname(module);
        const resolveIn = (spec: string) => {
          assert.ok(spec.startsWith('./') || spec.startsWith('../'), `${module} imports ${spec}, which is not one of its own chunks`);
          return posix.normalize(posix.join(dir, spec));
        };
        const found = {
          static: [...code.matchAll(/\bimport\s*(?:[\w${}\s,*]+from\s*)?["']([^"']+)["']/g)].map((m) => resolveIn(m[1])),
          dynamic: [...code.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g)].map((m) => resolveIn(m[1])),
        };
        for (const target of [...found.static, ...found.dynamic])
          assert.ok(s.modules.includes(target), `${module} imports ${target}, which the build did not write for ${s.name}`);
        assert.doesNotMatch(code, /\brequire\(/, `${module} requires nothing`);
        assert.doesNotMatch(code, /process\.env\.NODE_ENV/, `${module} has NODE_ENV inlined`);
        imports.set(module, found);
      }
      // What is loaded before the entry runs: it and its static imports, transitively.
      const atStart = new Set<string>();
      const visit = (module: string) => {
        if (atStart.has(module)) return;
        atStart.add(module);
        for (const next of imports.get(module)!.static) visit(next);
      };
      visit(s.name);
      if (s.modules.length > 1) {
        // The parts few requests need are loaded on demand, never at start.
        const onDemand = s.modules.filter((m) => /\/(incremental-delivery|compiled-execution|http-subscriptions)-[^/]*\.js$/.test(m));
        assert.equal(onDemand.length, 3, `${s.name}: incremental delivery, compiled execution and HTTP subscriptions have chunks of their own`);
        for (const m of onDemand) assert.ok(!atStart.has(m), `${s.name}: ${m} is not loaded at start`);
        assert.equal(s.startBytes < s.bytes, true, `${s.name}: less is loaded at start than built`);
      } else {
        assert.equal(s.startBytes, s.bytes);
      }
      assert.ok(s.gzipBytes < s.bytes);
      console.log(
        `${s.name}: ${(s.bytes / 1024).toFixed(1)} KB minified, ${(s.gzipBytes / 1024).toFixed(1)} KB gzip, ${s.modules.length} modules, ${(s.startBytes / 1024).toFixed(1)} KB at start`,
      );
    }
    for (const name of ['vercel.js', 'vercel-edge-runtime.js']) {
      assert.deepEqual(sizes.find((s) => s.name === name)!.modules, [name], `${name} is one file, as Vercel deploys a function`);
    }
    assert.ok(sizes.find((s) => s.name === 'workerd.js')!.modules.length > 1, 'the workerd bundle has its chunks');
    const vercel = await readFile(bundle('vercel.js'), 'utf8');
    assert.match(vercel, /runtime:\s*"edge"/);
    // Runtimes that refuse code generation get no plan code generator; the others do.
    const allCode = async (name: string) =>
      (await Promise.all(sizes.find((s) => s.name === name)!.modules.map((m) => readFile(join(outdir, m), 'utf8')))).join('\n');
    for (const name of ['workerd.js', 'vercel.js', 'vercel-edge-runtime.js'])
      assert.doesNotMatch(await allCode(name), /new Function\(/, `${name} has no code generator`);
    for (const name of ['deno.js', 'bun.js']) assert.match(await allCode(name), /new Function\(/, `${name} has the code generator`);
  });

  test('what a bundle loads at start holds only the parts of graphql-js the endpoint calls', () => {
    // graphql-js's schema-building and tooling utilities, none of which the endpoint calls: one read
    // of the package's namespace object as a whole puts them (and every other export) in the bundle.
    const unused = ['buildClientSchema', 'extendSchema', 'introspectionFromSchema', 'lexicographicSortSchema', 'separateOperations', 'stripIgnoredCharacters'];
    for (const s of sizes) {
      const graphqlModules = s.startInputs.filter((i) => /(^|\/)node_modules\/graphql\//.test(i));
      assert.ok(
        graphqlModules.some((i) => /\/execution\/execute\.m?js$/.test(i)),
        `${s.name}: graphql-js's executor is loaded at start`,
      );
      const shipped = graphqlModules.filter((i) => unused.some((name) => i.endsWith(`/utilities/${name}.mjs`) || i.endsWith(`/utilities/${name}.js`)));
      assert.deepEqual(shipped, [], `${s.name}: graphql-js utilities the endpoint never calls are loaded at start`);
    }
  });

  test('a build replaces the chunks of the one before, so no stale chunk is deployed', { timeout: 120_000 }, async () => {
    const again = await mkdtemp(join(tmpdir(), 'skiff-edge-again-'));
    try {
      await build({ outdir: again, quiet: true });
      const stale = join(again, 'chunks', 'workerd', 'compiled-execution-STALE.js');
      await writeFile(stale, 'export {};');
      const rebuilt = await build({ outdir: again, quiet: true });
      const files = (await readdir(join(again, 'chunks', 'workerd'))).map((f) => `chunks/workerd/${f}`).sort();
      assert.deepEqual(files, rebuilt.find((s) => s.name === 'workerd.js')!.modules.slice(1));
    } finally {
      await rm(again, { recursive: true, force: true });
    }
  });

  test('Node: importing the bundle', { timeout: 120_000 }, async () => {
    const mod = await import(pathToFileURL(bundle('graphql.js')).href);
    assert.equal(typeof mod.createGraphQLHandler, 'function');
    await answersLikeNode((path, init) => mod.default.fetch(new Request(`http://localhost${path}`, init)));
    const vercel = await import(pathToFileURL(bundle('vercel.js')).href);
    assert.deepEqual(vercel.config, { runtime: 'edge' });
    // Vercel routes by file: its handler answers on /api/graphql as well.
    const res = await vercel.default(new Request(`http://localhost/api/graphql?query=${encodeURIComponent('{ country(code: "FR") { name } }')}`));
    assert.deepEqual(await res.json(), { data: { country: { name: 'France' } } });
  });

  test('Deno: deno serve on the bundle, with no permission beyond the socket', { timeout: 120_000 }, async (t) => {
    const deno = await startDeno([bundle('deno.js')]);
    t.after(() => deno.stop());
    await answersLikeNode(deno.fetch);
  });

  test("Bun: bun serving the bundle's default export", { timeout: 120_000 }, async (t) => {
    const bun = await startBun(bundle('bun.js'));
    t.after(() => bun.stop());
    await answersLikeNode(bun.fetch);
  });

  test('workerd (Miniflare): the module worker bundle wrangler.toml deploys', { timeout: 120_000 }, async (t) => {
    const wrangler = await wranglerConfig();
    assert.equal(basename(wrangler.main), 'workerd.js', 'wrangler.toml deploys the workerd bundle');
    const workerd = await startWorkerd(bundle(basename(wrangler.main)), wrangler.compatibility_date);
    t.after(() => workerd.stop());
    await answersLikeNode(workerd.fetch);
  });

  test('workerd serve: the modules wrangler.toml uploads, and nothing else, serve every query', { timeout: 120_000 }, async (t) => {
    const wrangler = await wranglerConfig();
    // wrangler uploads `main`, and with find_additional_modules the files under base_dir that its module rules match.
    const baseDir = wrangler.base_dir ?? posix.dirname(wrangler.main);
    assert.equal(posix.relative(baseDir, wrangler.main), 'workerd.js');
    const globs = wrangler.find_additional_modules ? (wrangler.rules ?? []).filter((r) => r.type === 'ESModule').flatMap((r) => r.globs) : [];
    const uploaded = (await readdir(outdir, { recursive: true }))
      .map((f) => f.split(sep).join('/'))
      .filter((f) => f !== 'workerd.js' && globs.some((g) => globPattern(g).test(f)))
      .sort();
    const built = sizes.find((s) => s.name === 'workerd.js')!.modules;
    assert.deepEqual(['workerd.js', ...uploaded], built, 'wrangler uploads exactly the modules the build wrote for workerd');
    const workdir = await mkdtemp(join(tmpdir(), 'skiff-workerd-serve-'));
    const workerd = await startWorkerdServe({ dir: outdir, modules: built }, wrangler.compatibility_date, workdir);
    t.after(async () => {
      await workerd.stop();
      await rm(workdir, { recursive: true, force: true });
    });
    await answersLikeNode(workerd.fetch);
  });

  test("Vercel edge-runtime: the script bundle's fetch listener", { timeout: 120_000 }, async (t) => {
    const edge = await startEdgeRuntime(bundle('vercel-edge-runtime.js'));
    t.after(() => edge.stop());
    await answersLikeNode(edge.fetch, { anyPath: true });
    const res = await edge.fetch(`/api/graphql?query=${encodeURIComponent('{ country(code: "DE") { capital } }')}`);
    assert.deepEqual(await res.json(), { data: { country: { capital: 'Berlin' } } });
  });
});
