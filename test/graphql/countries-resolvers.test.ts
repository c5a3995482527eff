// Resolver and filter behaviour through graphql-js `graphql()` against the served schema: the
// behaviours users of the public API rely on, checked against the data packages where they vary.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import { graphqlWhole } from '../support/graphql-whole.ts';
import { countriesSchema } from '../../src/countries/index.ts';

const require = createRequire(import.meta.url);
const cl = require('countries-list') as {
  continents: Record<string, string>;
  countries: Record<string, { name: string; continent: string; currency: string[]; languages: string[] }>;
  languages: Record<string, { rtl?: number }>;
};
const provinces = require('provinces') as { name: string; country: string; short?: string }[];
const allCodes = Object.keys(cl.countries);

interface Result {
  data?: Record<string, any> | null;
  errors?: { message: string; path?: (string | number)[]; extensions?: Record<string, unknown> }[];
}

/** Executes and returns the result as a client sees it (serialized JSON). */
async function run(source: string, variableValues?: Record<string, unknown>): Promise<Result> {
  return JSON.parse(JSON.stringify(await graphqlWhole({ schema: countriesSchema, source, variableValues })));
}
async function data(source: string, variableValues?: Record<string, unknown>): Promise<Record<string, any>> {
  const result = await run(source, variableValues);
  assert.equal(result.errors, undefined, JSON.stringify(result.errors));
  return result.data!;
}
const codes = (list: { code: string }[]) => list.map((c) => c.code);

describe('countries resolvers', () => {
  it('countries: all of countries-list with no filter', async () => {
    const d = await data('{ countries { code } }');
    assert.deepEqual(codes(d.countries), allCodes);
    assert.equal(d.countries.length, Object.keys(cl.countries).length);
  });

  it('country by code; unknown code -> null', async () => {
    const d = await data(
      '{ br: country(code: "BR") { code name native capital currency phone continent { code name } languages { code name native rtl } } zz: country(code: "ZZ") { code } lower: country(code: "br") { code } }',
    );
    assert.deepEqual(d.br, {
      code: 'BR',
      name: 'Brazil',
      native: 'Brasil',
      capital: 'Brasília',
      currency: 'BRL',
      phone: '55',
      continent: { code: 'SA', name: 'South America' },
      languages: [{ code: 'pt', name: 'Portuguese', native: 'Português', rtl: false }],
    });
    assert.equal(d.zz, null);
    assert.equal(d.lower, null);
  });

  it('response keys keep the selection order', async () => {
    const d = await data('{ country(code: "BR") { phone name code continent { name code } emoji } }');
    assert.deepEqual(Object.keys(d.country), ['phone', 'name', 'code', 'continent', 'emoji']);
    assert.deepEqual(Object.keys(d.country.continent), ['name', 'code']);
  });

  it('regex "^United" on name matches AE, GB, US', async () => {
    const d = await data('{ countries(filter: { name: { regex: "^United" } }) { code name } }');
    assert.deepEqual(codes(d.countries), ['AE', 'GB', 'US']);
  });

  it('continent filter takes a continent code', async () => {
    const d = await data('{ countries(filter: { continent: { eq: "OC" } }) { code continent { code } } }');
    const expected = allCodes.filter((c) => cl.countries[c].continent === 'OC');
    assert.ok(expected.length > 10);
    assert.deepEqual(codes(d.countries), expected);
    const none = await data('{ countries(filter: { continent: { eq: "Oceania" } }) { code } }');
    assert.deepEqual(none.countries, []);
  });

  it('eq, ne, in, nin on code; every operator given must hold', async () => {
    const d = await data(`{
      eq: countries(filter: { code: { eq: "DE" } }) { code }
      ne: countries(filter: { code: { ne: "DE" } }) { code }
      in: countries(filter: { code: { in: ["FR", "AD", "ZZ"] } }) { code }
      nin: countries(filter: { code: { nin: ["FR", "AD"] } }) { code }
      both: countries(filter: { code: { in: ["FR", "AD", "DE"], ne: "AD" } }) { code }
      fields: countries(filter: { continent: { eq: "EU" }, currency: { eq: "CHF" } }) { code }
      emptyIn: countries(filter: { code: { in: [] } }) { code }
      emptyNin: countries(filter: { code: { nin: [] } }) { code }
      nullOp: countries(filter: { code: { eq: null } }) { code }
      empty: countries(filter: {}) { code }
    }`);
    assert.deepEqual(codes(d.eq), ['DE']);
    assert.deepEqual(
      codes(d.ne),
      allCodes.filter((c) => c !== 'DE'),
    );
    assert.deepEqual(codes(d.in), ['AD', 'FR'], 'results keep dataset order');
    assert.deepEqual(
      codes(d.nin),
      allCodes.filter((c) => c !== 'FR' && c !== 'AD'),
    );
    assert.deepEqual(codes(d.both), ['DE', 'FR']);
    assert.deepEqual(
      codes(d.fields),
      allCodes.filter((c) => cl.countries[c].continent === 'EU' && cl.countries[c].currency.join(',') === 'CHF'),
    );
    assert.ok(d.fields.length >= 1);
    assert.deepEqual(d.emptyIn, []);
    assert.equal(d.emptyNin.length, allCodes.length);
    assert.equal(d.nullOp.length, allCodes.length, 'an explicit null operator is no constraint');
    assert.equal(d.empty.length, allCodes.length);
  });

  it('currency filter matches the comma-joined string; regex works on it', async () => {
    const d = await data('{ joined: countries(filter: { currency: { regex: "," } }) { code currency currencies } }');
    const expected = allCodes.filter((c) => cl.countries[c].currency.length > 1);
    assert.ok(expected.length > 3);
    assert.deepEqual(codes(d.joined), expected);
    for (const c of d.joined) assert.deepEqual(c.currencies, c.currency.split(','));
  });

  it('continents and languages filters', async () => {
    const d = await data(`{
      continents(filter: { code: { in: ["EU", "AF"] } }) { code name countries { code } }
      languages(filter: { code: { regex: "^e" } }) { code }
      all: continents { code }
    }`);
    assert.deepEqual(codes(d.continents), ['AF', 'EU']);
    assert.deepEqual(
      codes(d.continents[1].countries),
      allCodes.filter((c) => cl.countries[c].continent === 'EU'),
    );
    assert.deepEqual(
      codes(d.languages),
      Object.keys(cl.languages).filter((l) => l.startsWith('e')),
    );
    assert.deepEqual(codes(d.all), Object.keys(cl.continents));
  });

  it('capital and currency: "" -> null (AQ), currencies/phones split on ","', async () => {
    const d = await data(
      '{ aq: country(code: "AQ") { capital currency currencies } us: country(code: "US") { currency currencies phone phones } mo: country(code: "MO") { capital } }',
    );
    assert.deepEqual(d.aq, { capital: null, currency: null, currencies: [] });
    assert.equal(d.mo.capital, null);
    assert.equal(d.us.currency, cl.countries.US.currency.join(','));
    assert.deepEqual(d.us.currencies, cl.countries.US.currency);
    assert.ok(d.us.currencies.length > 1);
    assert.deepEqual(d.us.phones, d.us.phone.split(','));
    const multi = (await data('{ countries { code phone phones } }')).countries.filter((c: { phone: string }) => c.phone.includes(','));
    assert.ok(multi.length > 0, 'some country has several calling codes');
    for (const c of multi) assert.deepEqual(c.phones, c.phone.split(','));
  });

  it('rtl is a boolean', async () => {
    const d = await data('{ ar: language(code: "ar") { rtl } en: language(code: "en") { rtl } he: language(code: "he") { rtl } languages { code rtl } }');
    assert.equal(d.ar.rtl, true);
    assert.equal(d.he.rtl, true);
    assert.equal(d.en.rtl, false);
    for (const l of d.languages) assert.equal(l.rtl, cl.languages[l.code].rtl === 1);
  });

  it('Language.countries lists the countries speaking it; Continent.countries its members', async () => {
    const d = await data(
      '{ language(code: "pt") { countries { code } } continent(code: "SA") { name countries { code } } none: continent(code: "XX") { code } }',
    );
    assert.deepEqual(
      codes(d.language.countries),
      allCodes.filter((c) => cl.countries[c].languages.includes('pt')),
    );
    assert.ok(codes(d.language.countries).includes('BR'));
    assert.equal(d.continent.name, 'South America');
    assert.deepEqual(
      codes(d.continent.countries),
      allCodes.filter((c) => cl.countries[c].continent === 'SA'),
    );
    assert.equal(d.none, null);
  });

  it('name(lang:) translates; no lang is the English name', async () => {
    const d = await data('{ country(code: "DE") { name de: name(lang: "de") fr: name(lang: "fr") ja: name(lang: "ja") none: name(lang: null) } }');
    assert.deepEqual(d.country, { name: 'Germany', de: 'Deutschland', fr: 'Allemagne', ja: 'ドイツ', none: 'Germany' });
  });

  it('name(lang:) with an unknown language is a VALIDATION_ERROR naming the valid codes', async () => {
    const result = await run('{ country(code: "DE") { code name(lang: "xx") } }');
    assert.equal(result.data?.country, null, 'the non-null name nulls its country');
    assert.equal(result.errors?.length, 1);
    const [error] = result.errors!;
    assert.equal(error.extensions?.code, 'VALIDATION_ERROR');
    assert.match(error.message, /Invalid lang "xx": expected one of de, en, es, .*zh/);
    assert.deepEqual(error.path, ['country', 'name']);
  });

  it('emoji and emojiU', async () => {
    const d = await data('{ br: country(code: "BR") { emoji emojiU } us: country(code: "US") { emoji emojiU } }');
    assert.deepEqual(d.br, { emoji: '🇧🇷', emojiU: 'U+1F1E7 U+1F1F7' });
    assert.deepEqual(d.us, { emoji: '🇺🇸', emojiU: 'U+1F1FA U+1F1F8' });
  });

  it('awsRegion for well-known countries', async () => {
    const d = await data(`{
      br: country(code: "BR") { awsRegion } de: country(code: "DE") { awsRegion } us: country(code: "US") { awsRegion }
      jp: country(code: "JP") { awsRegion } au: country(code: "AU") { awsRegion } gb: country(code: "GB") { awsRegion }
      fr: country(code: "FR") { awsRegion } in: country(code: "IN") { awsRegion } za: country(code: "ZA") { awsRegion }
      ca: country(code: "CA") { awsRegion } sg: country(code: "SG") { awsRegion } ie: country(code: "IE") { awsRegion }
    }`);
    const regions = Object.fromEntries(Object.entries(d).map(([k, v]) => [k, v.awsRegion]));
    assert.deepEqual(regions, {
      br: 'sa-east-1',
      de: 'eu-central-1',
      us: 'us-east-1',
      jp: 'ap-northeast-1',
      au: 'ap-southeast-2',
      gb: 'eu-west-2',
      fr: 'eu-west-3',
      in: 'ap-south-1',
      za: 'af-south-1',
      ca: 'ca-central-1',
      sg: 'ap-southeast-1',
      ie: 'eu-west-1',
    });
  });

  it('states of CA come from provinces; State.country links back', async () => {
    const d = await data('{ country(code: "CA") { states { code name country { code } } } gb: country(code: "GB") { states { code } } }');
    assert.deepEqual(
      d.country.states,
      provinces.filter((p) => p.country === 'CA').map((p) => ({ code: p.short ?? null, name: p.name, country: { code: 'CA' } })),
    );
    assert.ok(d.country.states.some((s: { code: string; name: string }) => s.code === 'QC' && s.name === 'Quebec'));
    assert.ok(d.gb.states.length > 0 && d.gb.states.every((s: { code: string | null }) => s.code === null), 'GB states have no code');
  });

  it('subdivisions of GB include GB-ENG with its flag; others have none or null emoji', async () => {
    const d = await data('{ country(code: "GB") { subdivisions { code name emoji } } br: country(code: "BR") { subdivisions { code } } }');
    const subs = d.country.subdivisions as { code: string; name: string; emoji: string | null }[];
    const eng = subs.find((s) => s.code === 'GB-ENG');
    assert.deepEqual(eng, { code: 'GB-ENG', name: 'England', emoji: '\u{1F3F4}\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}' });
    assert.ok(subs.find((s) => s.code === 'GB-SCT')?.emoji);
    assert.ok(subs.find((s) => s.code === 'GB-WLS')?.emoji);
    assert.equal(subs.find((s) => s.code === 'GB-NIR')?.emoji, null);
    assert.deepEqual(d.br.subdivisions, [], 'BR subdivisions are States, not Country/Province');
  });

  it('an invalid regex is a GraphQL error with a clear message, no data for that field', async () => {
    const result = await run('{ countries(filter: { name: { regex: "(" } }) { code } }');
    assert.equal(result.data, null);
    assert.equal(result.errors?.length, 1);
    assert.match(result.errors![0].message, /Invalid regex for filter field "name": .*(Unterminated group|unterminated)/i);
    assert.equal(result.errors![0].extensions?.code, 'BAD_USER_INPUT');
  });

  it('backreferences, lookarounds and over-long patterns are refused', async () => {
    for (const [pattern, why] of [
      ['(a)\\1', /backreferences are not supported/],
      ['^(?=U)', /lookaround assertions are not supported/],
      ['a'.repeat(300), /at most 256/],
      ['(a{1000}){1000}', /too complex/],
    ] as const) {
      const result = await run('query($p: String) { countries(filter: { name: { regex: $p } }) { code } }', { p: pattern });
      assert.equal(result.data, null, pattern);
      assert.match(result.errors![0].message, why, pattern);
    }
  });

  it('pathological patterns finish (linear-time matcher) with the right answer', { timeout: 30_000 }, async () => {
    // On a backtracking engine each of these runs for seconds to hours over the 252 names; the
    // expected answers are computed here without regexes.
    const names: string[] = Object.values(cl.countries).map((c) => c.name);
    const count = (s: string, ch: string) => s.split(ch).length - 1;
    const cases: [string, (name: string) => boolean][] = [
      ['(a+)+$', (n) => n.endsWith('a')],
      ['(.*)*x$', (n) => n.endsWith('x')],
      ['.*.*.*.*.*.*.*.*z', (n) => n.includes('z')],
      ['(\\w+\\s?)+!', (n) => n.includes('!')],
      ['(a|a)*b', (n) => n.includes('b')],
      ['(.*a){5}', (n) => count(n, 'a') >= 5],
      ['^(([A-Z][a-z]+)\\s?)+$', (n) => /^[A-Z][a-z]+( [A-Z][a-z]+)*$/.test(n)],
    ];
    for (const [pattern, expected] of cases) {
      const d = await data('query($p: String) { countries(filter: { name: { regex: $p } }) { name } }', { p: pattern });
      assert.deepEqual(
        d.countries.map((c: { name: string }) => c.name),
        names.filter(expected),
        pattern,
      );
    }
  });
});
