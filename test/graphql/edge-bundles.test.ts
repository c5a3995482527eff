// The built edge bundles answering real countries queries on Node, Deno, Bun, workerd and Vercel's
// edge-runtime, byte for byte like the in-process handler.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { pathToFileURL } from 'node:url';
import { build, type BundleSize } from '../../scripts/build-edge.mjs';
import countries from '../../src/index.ts';
import { countriesSubgraphSDL, dataset, LOCALES } from '../../src/countries/index.ts';
import { startBun, startDeno, startEdgeRuntime, startWorkerd, type FetchFn } from '../support/graphql-edge.ts';

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

  test('the build writes a self-contained minified bundle per target', { timeout: 120_000 }, async () => {
    assert.deepEqual(sizes.map((s) => s.name).sort(), ['bun.js', 'deno.js', 'graphql.js', 'vercel-edge-runtime.js', 'vercel.js', 'workerd.js']);
    for (const s of sizes) {
      const code = await readFile(s.file, 'utf8');
      assert.doesNotMatch(code, /\bfrom\s*["'][^"']+["']|\brequire\(|\bimport\(/, `${s.name} imports nothing at run time`);
      assert.doesNotMatch(code, /process\.env\.NODE_ENV/, `${s.name} has NODE_ENV inlined`);
      assert.ok(s.gzipBytes < s.bytes);
      console.log(`${s.name}: ${(s.bytes / 1024).toFixed(1)} KB minified, ${(s.gzipBytes / 1024).toFixed(1)} KB gzip`);
    }
    const vercel = await readFile(bundle('vercel.js'), 'utf8');
    assert.match(vercel, /runtime:\s*"edge"/);
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
    const wrangler = parseToml(await readFile(new URL('../../wrangler.toml', import.meta.url), 'utf8')) as {
      main: string;
      compatibility_date: string;
    };
    assert.equal(basename(wrangler.main), 'workerd.js', 'wrangler.toml deploys the workerd bundle');
    const workerd = await startWorkerd(bundle(basename(wrangler.main)), wrangler.compatibility_date);
    t.after(() => workerd.stop());
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
