// The generated dataset module against its sources: regenerating gives the committed bytes, every
// field of every object equals what the npm data packages say, and the runtime never imports them.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { generateCountriesModule, OUTPUT } from '../../scripts/gen-countries-data.ts';
import { AWS_REGIONS, distanceKm, nearestAwsRegion } from '../../src/countries/aws-regions.ts';
import { dataset, LOCALES } from '../../src/countries/dataset.ts';

const require = createRequire(import.meta.url);
const cl = require('countries-list') as {
  continents: Record<string, string>;
  countries: Record<string, { name: string; native: string; phone: number[]; continent: string; capital: string; currency: string[]; languages: string[] }>;
  languages: Record<string, { name: string; native: string; rtl?: number }>;
  getEmojiFlag(code: string): string;
};
const provinces = require('provinces') as { name: string; country: string; short?: string }[];
const iso = require('iso-3166-2') as { country(code: string): { sub: Record<string, { type: string; name: string }> } | null };
const i18n = require('i18n-iso-countries') as { getName(code: string, lang: string): string | undefined };
const srcDir = fileURLToPath(new URL('../../src/countries/', import.meta.url));
const srcRoot = fileURLToPath(new URL('../../src/', import.meta.url));

describe('countries dataset module', () => {
  it('regenerating produces exactly the committed data.generated.ts', () => {
    const committed = readFileSync(OUTPUT, 'utf8');
    assert.ok(committed === generateCountriesModule(), 'src/countries/data.generated.ts is stale: run `npm run gen:data` and commit');
  });

  it('runtime modules import no npm data package and no Node built-in', () => {
    for (const file of readdirSync(srcDir).filter((f) => f.endsWith('.ts'))) {
      const text = readFileSync(join(srcDir, file), 'utf8');
      const imports = [...text.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+['"]([^'"]+)['"]/gm)].map((m) => m[1]);
      for (const spec of imports) {
        // graphql, and our own modules (the @defer/@stream definitions live with the streams): code, not data.
        const ours = spec.startsWith('.') && resolve(srcDir, spec).startsWith(srcRoot);
        assert.ok(ours || spec === 'graphql', `${file} imports ${spec}`);
      }
      assert.doesNotMatch(text, /\bprocess\.|\bDeno\./, `${file} uses a runtime-specific global`);
    }
  });

  it('has every continent, country and language of countries-list, in its order', () => {
    assert.deepEqual(
      dataset.continents.map((c) => c.code),
      Object.keys(cl.continents),
    );
    assert.deepEqual(
      dataset.countries.map((c) => c.code),
      Object.keys(cl.countries),
    );
    assert.deepEqual(
      dataset.languages.map((l) => l.code),
      Object.keys(cl.languages),
    );
    assert.equal(dataset.countries.length, Object.keys(cl.countries).length);
  });

  it('core country fields equal countries-list (capital/currency "" -> null, lists split)', () => {
    for (const c of dataset.countries) {
      const src = cl.countries[c.code];
      assert.equal(c.name, src.name, c.code);
      assert.equal(c.native, src.native, c.code);
      assert.equal(c.phone, src.phone.join(','), c.code);
      assert.deepEqual(c.phones, src.phone.map(String), c.code);
      assert.equal(c.capital, src.capital === '' ? null : src.capital, c.code);
      assert.equal(c.currency, src.currency.length ? src.currency.join(',') : null, c.code);
      assert.deepEqual(c.currencies, src.currency, c.code);
      assert.equal(c.continent.code, src.continent, c.code);
      assert.equal(c.continent.name, cl.continents[src.continent], c.code);
      assert.deepEqual(
        c.languages.map((l) => l.code),
        src.languages,
        c.code,
      );
      assert.equal(c.emoji, cl.getEmojiFlag(c.code), c.code);
    }
  });

  it('languages: names, rtl as boolean, countries speaking them', () => {
    for (const l of dataset.languages) {
      const src = cl.languages[l.code];
      assert.equal(l.name, src.name);
      assert.equal(l.native, src.native);
      assert.equal(l.rtl, src.rtl === 1);
      const speakers = Object.entries(cl.countries)
        .filter(([, c]) => c.languages.includes(l.code))
        .map(([code]) => code);
      assert.deepEqual(
        l.countries.map((c) => c.code),
        speakers,
        l.code,
      );
    }
    for (const ct of dataset.continents) {
      const members = Object.entries(cl.countries)
        .filter(([, c]) => c.continent === ct.code)
        .map(([code]) => code);
      assert.deepEqual(
        ct.countries.map((c) => c.code),
        members,
        ct.code,
      );
    }
  });

  it('states come from provinces, subdivisions from iso-3166-2 (types Country and Province)', () => {
    let states = 0;
    for (const c of dataset.countries) {
      const expected = provinces.filter((p) => p.country === c.code);
      states += expected.length;
      assert.deepEqual(
        c.states.map((s) => [s.code, s.name, s.country.code]),
        expected.map((p) => [p.short ?? null, p.name, c.code]),
        c.code,
      );
      const subs = Object.entries(iso.country(c.code)?.sub ?? {}).filter(([, s]) => s.type === 'Country' || s.type === 'Province');
      assert.deepEqual(
        c.subdivisions.map((s) => [s.code, s.name]),
        subs.map(([code, s]) => [code, s.name]),
        c.code,
      );
    }
    assert.equal(states, provinces.length, 'every province belongs to a known country');
  });

  it('localized names equal i18n-iso-countries, falling back to the English name', () => {
    for (const c of dataset.countries) {
      for (const lang of LOCALES) assert.equal(c.localizedNames[lang], i18n.getName(c.code, lang) ?? c.name, `${c.code} ${lang}`);
    }
  });

  it('awsRegion is the table region nearest to some point of the country (self-consistent table)', () => {
    const codes = new Set(AWS_REGIONS.map((r) => r.code));
    assert.equal(codes.size, AWS_REGIONS.length, 'no duplicate region codes');
    for (const c of dataset.countries) assert.ok(codes.has(c.awsRegion), `${c.code}: ${c.awsRegion}`);
    // Each region's own city maps to that region, and distances are symmetric and sane.
    for (const r of AWS_REGIONS) assert.equal(nearestAwsRegion(r.lat, r.lon).code, r.code);
    const fra = AWS_REGIONS.find((r) => r.code === 'eu-central-1')!;
    const lhr = AWS_REGIONS.find((r) => r.code === 'eu-west-2')!;
    const km = distanceKm(fra.lat, fra.lon, lhr.lat, lhr.lon);
    assert.ok(km > 600 && km < 700, `Frankfurt-London ${km} km`);
  });
});
