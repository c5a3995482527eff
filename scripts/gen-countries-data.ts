// Compiles the countries dataset into src/countries/data.generated.ts (run: `npm run gen:data`).
// The npm data packages are devDependencies read only here; the runtime imports the generated
// module alone, so the edge bundle carries just the fields the schema serves, in a compact form.
// `generateCountriesModule()` is pure and deterministic: a test regenerates it and compares it
// with the committed file, so the two cannot drift.
import { createRequire } from 'node:module';
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { nearestAwsRegion } from '../src/countries/aws-regions.ts';
import { flagEmoji } from '../src/countries/emoji.ts';

const require = createRequire(import.meta.url);

/** Locales offered by `Country.name(lang:)`: the 14 upstream registered (over 1% of web content). */
export const LOCALES = ['de', 'en', 'es', 'fa', 'fr', 'it', 'ja', 'nl', 'pl', 'pt', 'ru', 'tr', 'vi', 'zh'];

export const OUTPUT = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'countries', 'data.generated.ts');

interface ClCountry {
  name: string;
  native: string;
  phone: number[];
  continent: string;
  capital: string;
  currency: string[];
  languages: string[];
}
interface ClLanguage {
  name: string;
  native: string;
  rtl?: number;
}
interface Province {
  name: string;
  country: string;
  short?: string;
}
interface Iso31662 {
  country(code: string): { sub: Record<string, { type: string; name: string }> } | null;
}
interface Place {
  city?: string;
  cityAscii?: string;
  name?: string;
  latitude: number;
  longitude: number;
}
interface LocationTimezone {
  findLocationsByCountryIso(code: string): Place[];
  findCapitalOfCountryIso(code: string): Place | undefined;
}
interface I18nCountries {
  getName(code: string, lang: string): string | undefined;
}

// Capitals node-location-timezone does not know (AC, TA) or places wrongly (its TF capital
// "Saint-Pierre" sits at -19.05,-169.92, next to Niue): coordinates of the countries-list capital,
// from the public gazetteer entries of those settlements.
const CAPITAL_COORDINATES: Record<string, [number, number]> = {
  AC: [-7.93, -14.42], // Georgetown, Ascension Island
  TA: [-37.07, -12.31], // Edinburgh of the Seven Seas, Tristan da Cunha
  TF: [-49.35, 70.22], // Port-aux-Français, Kerguelen
};

const SUBDIVISION_TYPES = new Set(['Country', 'Province']);

function packageVersion(name: string): string {
  // Not require(`${name}/package.json`): countries-list's exports map does not expose it.
  const entry = require.resolve(name);
  const root = entry.slice(0, entry.lastIndexOf(`/node_modules/${name}/`) + `/node_modules/${name}`.length);
  return (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
}

function normalizePlace(name: string): string {
  return name
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/\bst\b\.?/g, 'saint')
    .replace(/[^a-z]/g, '');
}

/**
 * Coordinates of a country's capital: the countries-list capital looked up by name among
 * node-location-timezone's cities of that country; else the fixed entries above; else that
 * package's own capital record (which also covers the territories without a capital, e.g. AQ, BV).
 */
function capitalCoordinates(code: string, capital: string, places: LocationTimezone): [number, number] {
  if (capital) {
    const wanted = normalizePlace(capital);
    const city = places.findLocationsByCountryIso(code).find((p) => normalizePlace(p.city ?? '') === wanted || normalizePlace(p.cityAscii ?? '') === wanted);
    if (city) return [city.latitude, city.longitude];
  }
  const fixed = CAPITAL_COORDINATES[code];
  if (fixed) return fixed;
  const record = places.findCapitalOfCountryIso(code);
  if (record) return [record.latitude, record.longitude];
  throw new Error(`gen-countries-data: no coordinates for ${code} (${capital || 'no capital'}); add it to CAPITAL_COORDINATES`);
}

function assertClean(value: string, what: string, forbidden: string[]): string {
  for (const ch of forbidden) {
    if (value.includes(ch)) throw new Error(`gen-countries-data: ${what} ${JSON.stringify(value)} contains ${JSON.stringify(ch)}`);
  }
  return value;
}

/** The generated module's full text. */
export function generateCountriesModule(): string {
  const cl = require('countries-list') as {
    continents: Record<string, string>;
    countries: Record<string, ClCountry>;
    languages: Record<string, ClLanguage>;
    getEmojiFlag(code: string): string;
  };
  const provinces = require('provinces') as Province[];
  const iso = require('iso-3166-2') as Iso31662;
  const i18n = require('i18n-iso-countries') as I18nCountries;
  const places = require('node-location-timezone') as LocationTimezone;

  const regionsUsed = new Map<string, number>();
  const core: string[] = [];
  const names: string[][] = LOCALES.map(() => []);
  const stateLines: string[] = [];
  const subdivisionLines: string[] = [];
  for (const [code, c] of Object.entries(cl.countries)) {
    const [lat, lon] = capitalCoordinates(code, c.capital, places);
    const region = nearestAwsRegion(lat, lon).code;
    if (!regionsUsed.has(region)) regionsUsed.set(region, regionsUsed.size);

    // "" means "same as the English `name`", which is also the answer when i18n-iso-countries has
    // no entry (AC, TA).
    LOCALES.forEach((lang, i) => {
      const n = i18n.getName(code, lang);
      names[i].push(n === undefined || n === c.name ? '' : field(n, `${lang} name`));
    });

    stateLines.push(
      provinces
        .filter((p) => p.country === code)
        .map(
          (p) =>
            `${assertClean(field(p.short ?? '', 'state code'), 'state code', [':', '|'])}:${assertClean(field(p.name, 'state name'), 'state name', ['|'])}`,
        )
        .join('|'),
    );

    const subs = iso.country(code)?.sub ?? {};
    subdivisionLines.push(
      Object.entries(subs)
        .filter(([, s]) => SUBDIVISION_TYPES.has(s.type))
        .map(([subCode, s]) => {
          if (!subCode.startsWith(`${code}-`)) throw new Error(`gen-countries-data: subdivision ${subCode} not under ${code}`);
          return `${assertClean(field(subCode.slice(code.length + 1), 'subdivision code'), 'subdivision code', [':', '|'])}:${assertClean(field(s.name, 'subdivision name'), 'subdivision name', ['|'])}`;
        })
        .join('|'),
    );

    // The runtime derives `emoji` from the code (regional indicator symbols); prove that holds.
    if (cl.getEmojiFlag(code) !== flagEmoji(code)) throw new Error(`gen-countries-data: ${code} flag is not its regional indicators`);
    for (const lang of c.languages) {
      if (!cl.languages[lang]) throw new Error(`gen-countries-data: ${code} speaks unknown language ${lang}`);
    }
    if (!cl.continents[c.continent]) throw new Error(`gen-countries-data: ${code} on unknown continent ${c.continent}`);
    core.push(
      [code, c.name, c.native, c.phone.join(','), c.continent, c.capital, c.currency.join(','), c.languages.join(','), String(regionsUsed.get(region)!)]
        .map((v, i) => field(v, `country field ${i} of ${code}`))
        .join('\t'),
    );
  }

  const languageLines = Object.entries(cl.languages).map(([code, l]) =>
    [code, l.name, l.native, l.rtl === 1 ? '1' : '0'].map((v) => field(v, `language ${code}`)).join('\t'),
  );
  const sources = ['countries-list', 'provinces', 'iso-3166-2', 'i18n-iso-countries', 'node-location-timezone']
    .map((p) => `${p}@${packageVersion(p)}`)
    .join(', ');
  // Each table is one string literal: a string costs a parser next to nothing, and src/countries/
  // dataset.ts splits a table only when a query first reads it.
  const table = (name: string, doc: string, lines: string[]) => [`/** ${doc} */`, `export const ${name} = ${JSON.stringify(lines.join('\n'))};`, ''];

  return [
    '// GENERATED FILE, do not edit. Regenerate with `npm run gen:data` (scripts/gen-countries-data.ts);',
    '// test/graphql/countries-data.test.ts fails when this file and the generator disagree.',
    `// Sources: ${sources}.`,
    '// Tables are strings: one line per row ("\\n"), fields separated by "\\t".',
    '',
    "/** Locales accepted by `Country.name(lang:)`, in the order of COUNTRY_NAMES' lines. */",
    `export const LOCALES: readonly string[] = ${JSON.stringify(LOCALES)};`,
    '',
    '/** AWS region codes referenced by index from COUNTRIES. */',
    `export const AWS_REGION_CODES: readonly string[] = ${JSON.stringify([...regionsUsed.keys()])};`,
    '',
    '/** [code, name] */',
    `export const CONTINENT_ROWS: readonly (readonly [string, string])[] = ${JSON.stringify(Object.entries(cl.continents))};`,
    '',
    ...table('LANGUAGES', 'code, name, native, rtl (1 or 0)', languageLines),
    ...table(
      'COUNTRIES',
      'code, name, native, phone (comma-joined), continent code, capital ("" = none), currency (comma-joined, "" = none), language codes (comma-joined), AWS_REGION_CODES index',
      core,
    ),
    ...table(
      'COUNTRY_NAMES',
      'per locale of LOCALES, one line: each country\'s name in COUNTRIES order ("" = the English name)',
      names.map((n) => n.join('\t')),
    ),
    ...table('COUNTRY_STATES', 'per country, one line: "code:name|..." (empty code = none)', stateLines),
    ...table('COUNTRY_SUBDIVISIONS', 'per country, one line: "suffix:name|..." (code = "CC-suffix")', subdivisionLines),
  ].join('\n');
}

/** A value as a table field: the table separators may not occur in it. */
function field(value: string, what: string): string {
  return assertClean(value, what, ['\t', '\n']);
}

function writeAtomically(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = openSync(tmp, 'w');
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const text = generateCountriesModule();
  writeAtomically(OUTPUT, text);
  console.log(`wrote ${OUTPUT} (${Buffer.byteLength(text)} bytes)`);
}
