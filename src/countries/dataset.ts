// The countries dataset as ready-made objects, decoded from the generated string tables the first
// time something reads them, table by table: an isolate that never answers a countries query never
// splits a string, and the first Q1 decodes the countries and languages, not the states,
// subdivisions or the fourteen lists of localized names. Decoded fields hold their final values
// (nulls for "", split lists, derived emoji, cross links), so resolvers are plain property reads.
import { AWS_REGION_CODES, CONTINENT_ROWS, COUNTRIES, COUNTRY_NAMES, COUNTRY_STATES, COUNTRY_SUBDIVISIONS, LANGUAGES, LOCALES } from './data.generated.ts';
import { emojiCodePoints, flagEmoji, subdivisionFlagEmoji } from './emoji.ts';

export { LOCALES };

export interface Continent {
  readonly __typename: 'Continent';
  readonly code: string;
  readonly name: string;
  readonly countries: Country[];
}

export interface Language {
  readonly __typename: 'Language';
  readonly code: string;
  readonly name: string;
  readonly native: string;
  readonly rtl: boolean;
  readonly countries: Country[];
}

export interface State {
  readonly code: string | null;
  readonly name: string;
  readonly country: Country;
}

export interface Subdivision {
  readonly code: string;
  readonly name: string;
  readonly emoji: string | null;
}

export interface Country {
  readonly __typename: 'Country';
  readonly awsRegion: string;
  readonly capital: string | null;
  readonly code: string;
  readonly continent: Continent;
  readonly currencies: string[];
  readonly currency: string | null;
  readonly emoji: string;
  readonly emojiU: string;
  readonly languages: Language[];
  readonly name: string;
  readonly native: string;
  readonly phone: string;
  readonly phones: string[];
  readonly states: State[];
  readonly subdivisions: Subdivision[];
  /** Country name per locale in LOCALES (already falling back to `name`). */
  readonly localizedNames: Readonly<Record<string, string>>;
  /** The values `CountryFilterInput` tests: `continent` is the code, `currency` the joined string. */
  readonly filterFields: Readonly<Record<'code' | 'continent' | 'currency' | 'name', string>>;
}

function splitList(joined: string): string[] {
  return joined === '' ? [] : joined.split(',');
}

/** A table's lines, split into fields. */
function rows(table: string): string[][] {
  return table.split('\n').map((line) => line.split('\t'));
}

/** A value computed on first call and kept. */
function once<T>(compute: () => T): () => T {
  let value: T | undefined;
  let done = false;
  return () => {
    if (!done) {
      value = compute();
      done = true;
    }
    return value as T;
  };
}

// States, subdivisions and localized names live in their own tables, split on first read; the
// country objects reach them through getters on one shared prototype.
const statesTable = once(() =>
  COUNTRY_STATES.split('\n').map((line, i): State[] => {
    if (line === '') return [];
    const country = tables().countries[i];
    return line.split('|').map((entry) => {
      const sep = entry.indexOf(':');
      return { code: sep === 0 ? null : entry.slice(0, sep), name: entry.slice(sep + 1), country };
    });
  }),
);

const subdivisionsTable = once(() =>
  COUNTRY_SUBDIVISIONS.split('\n').map((line, i): Subdivision[] => {
    if (line === '') return [];
    const countryCode = tables().countries[i].code;
    return line.split('|').map((entry) => {
      const sep = entry.indexOf(':');
      const code = `${countryCode}-${entry.slice(0, sep)}`;
      return { code, name: entry.slice(sep + 1), emoji: subdivisionFlagEmoji(code) };
    });
  }),
);

const nameLines = once(() => COUNTRY_NAMES.split('\n'));
const namesByLocale = new Map<string, readonly string[]>();

/** Every country's name in `locale` (one of LOCALES), in dataset order, decoded on first use. */
function namesIn(locale: string): readonly string[] {
  let names = namesByLocale.get(locale);
  if (names === undefined) {
    const line = nameLines()[LOCALES.indexOf(locale)];
    const countries = tables().countries;
    names = line.split('\t').map((n, i) => (n === '' ? countries[i].name : n));
    namesByLocale.set(locale, names);
  }
  return names;
}

/** `country`'s name in `locale`, which must be one of LOCALES. */
export function localizedName(country: Country, locale: string): string {
  return namesIn(locale)[(country as CountryRecord).index];
}

class CountryRecord implements Country {
  readonly __typename = 'Country' as const;
  readonly currencies: string[];
  readonly currency: string | null;
  readonly capital: string | null;
  readonly emoji: string;
  readonly emojiU: string;
  readonly languages: Language[];
  readonly phones: string[];
  readonly filterFields: Readonly<Record<'code' | 'continent' | 'currency' | 'name', string>>;

  constructor(
    readonly index: number,
    readonly code: string,
    readonly name: string,
    readonly native: string,
    readonly phone: string,
    readonly continent: Continent,
    capital: string,
    currency: string,
    languages: Language[],
    readonly awsRegion: string,
  ) {
    this.capital = capital === '' ? null : capital;
    this.currencies = splitList(currency);
    this.currency = currency === '' ? null : currency;
    this.emoji = flagEmoji(code);
    this.emojiU = emojiCodePoints(this.emoji);
    this.languages = languages;
    this.phones = splitList(phone);
    this.filterFields = { code, continent: continent.code, currency, name };
  }

  get states(): State[] {
    return statesTable()[this.index];
  }

  get subdivisions(): Subdivision[] {
    return subdivisionsTable()[this.index];
  }

  get localizedNames(): Readonly<Record<string, string>> {
    const names: Record<string, string> = Object.create(null);
    for (const locale of LOCALES) names[locale] = localizedName(this, locale);
    return names;
  }
}

/** Continents, languages and countries with their cross links: the tables every query needs. */
const tables = once(() => {
  const continents: Continent[] = CONTINENT_ROWS.map(([code, name]) => ({ __typename: 'Continent', code, name, countries: [] }));
  const continentByCode = new Map(continents.map((c) => [c.code, c]));
  const languages: Language[] = rows(LANGUAGES).map(([code, name, native, rtl]) => ({
    __typename: 'Language',
    code,
    name,
    native,
    rtl: rtl === '1',
    countries: [],
  }));
  const languageByCode = new Map(languages.map((l) => [l.code, l]));
  const countries: Country[] = rows(COUNTRIES).map(([code, name, native, phone, continentCode, capital, currency, languageCodes, region], i) => {
    const continent = continentByCode.get(continentCode)!;
    const spoken = splitList(languageCodes).map((l) => languageByCode.get(l)!);
    const country = new CountryRecord(i, code, name, native, phone, continent, capital, currency, spoken, AWS_REGION_CODES[Number(region)]);
    continent.countries.push(country);
    for (const language of spoken) language.countries.push(country);
    return country;
  });
  const countryByCode = new Map(countries.map((c) => [c.code, c]));
  return { continents, continentByCode, languages, languageByCode, countries, countryByCode };
});

export const dataset = {
  get continents(): readonly Continent[] {
    return tables().continents;
  },
  get countries(): readonly Country[] {
    return tables().countries;
  },
  get languages(): readonly Language[] {
    return tables().languages;
  },
  continent: (code: string): Continent | null => tables().continentByCode.get(code) ?? null,
  country: (code: string): Country | null => tables().countryByCode.get(code) ?? null,
  language: (code: string): Language | null => tables().languageByCode.get(code) ?? null,
};
