// The countries dataset as ready-made objects, built once at module load from the generated rows:
// every field already holds its final value (nulls for "", split lists, derived emoji, cross
// links), so resolvers are plain property reads.
import { AWS_REGION_CODES, CONTINENT_ROWS, COUNTRY_ROWS, LANGUAGE_ROWS, LOCALES } from './data.generated.ts';
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

const continents: Continent[] = CONTINENT_ROWS.map(([code, name]) => ({
  __typename: 'Continent',
  code,
  name,
  countries: [],
}));
const continentByCode = new Map(continents.map((c) => [c.code, c]));

const languages: Language[] = LANGUAGE_ROWS.map(([code, name, native, rtl]) => ({
  __typename: 'Language',
  code,
  name,
  native,
  rtl: rtl === 1,
  countries: [],
}));
const languageByCode = new Map(languages.map((l) => [l.code, l]));

const countries: Country[] = COUNTRY_ROWS.map((row) => {
  const [code, name, native, phone, continentCode, capital, currency, languageCodes, region, localized, states, subs] = row;
  const continent = continentByCode.get(continentCode)!;
  const localizedNames: Record<string, string> = Object.create(null);
  localized.split('|').forEach((n, i) => {
    localizedNames[LOCALES[i]] = n === '' ? name : n;
  });
  const emoji = flagEmoji(code);
  const country: Country = {
    __typename: 'Country',
    awsRegion: AWS_REGION_CODES[region],
    capital: capital === '' ? null : capital,
    code,
    continent,
    currencies: splitList(currency),
    currency: currency === '' ? null : currency,
    emoji,
    emojiU: emojiCodePoints(emoji),
    languages: splitList(languageCodes).map((l) => languageByCode.get(l)!),
    name,
    native,
    phone,
    phones: splitList(phone),
    states: [],
    subdivisions:
      subs === ''
        ? []
        : subs.split('|').map((entry) => {
            const sep = entry.indexOf(':');
            const subCode = `${code}-${entry.slice(0, sep)}`;
            return { code: subCode, name: entry.slice(sep + 1), emoji: subdivisionFlagEmoji(subCode) };
          }),
    localizedNames,
    filterFields: { code, continent: continentCode, currency, name },
  };
  if (states !== '') {
    for (const entry of states.split('|')) {
      const sep = entry.indexOf(':');
      country.states.push({ code: sep === 0 ? null : entry.slice(0, sep), name: entry.slice(sep + 1), country });
    }
  }
  continent.countries.push(country);
  for (const language of country.languages) language.countries.push(country);
  return country;
});
const countryByCode = new Map(countries.map((c) => [c.code, c]));

export const dataset = {
  continents: continents as readonly Continent[],
  countries: countries as readonly Country[],
  languages: languages as readonly Language[],
  continent: (code: string): Continent | null => continentByCode.get(code) ?? null,
  country: (code: string): Country | null => countryByCode.get(code) ?? null,
  language: (code: string): Language | null => languageByCode.get(code) ?? null,
};
