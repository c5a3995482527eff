// The countries schema, built with graphql-js type objects. Types and fields are declared in the
// order introspection returns them for the public API (lexicographic), so the SDL printed from
// this schema matches the reference exactly; the federation surface is added in federation.ts.
import {
  GraphQLBoolean,
  GraphQLError,
  GraphQLID,
  GraphQLInputObjectType,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLString,
  type GraphQLFieldConfigMap,
  type GraphQLNullableType,
} from 'graphql';
import { dataset, localizedName, LOCALES, type Continent, type Country, type Language, type State, type Subdivision } from './dataset.ts';
import { applyFilter, type StringQueryOperatorInput } from './filters.ts';

const nonNull = <T extends GraphQLNullableType>(t: T) => new GraphQLNonNull(t);
const listOf = <T extends GraphQLNullableType>(t: T) => nonNull(new GraphQLList(nonNull(t)));

const LOCALE_SET = new Set(LOCALES);
const LOCALE_LIST = LOCALES.join(', ');

export const StringQueryOperatorInputType = new GraphQLInputObjectType({
  name: 'StringQueryOperatorInput',
  fields: {
    eq: { type: GraphQLString },
    in: { type: new GraphQLList(nonNull(GraphQLString)) },
    ne: { type: GraphQLString },
    nin: { type: new GraphQLList(nonNull(GraphQLString)) },
    regex: { type: GraphQLString },
  },
});

export const ContinentType: GraphQLObjectType<Continent> = new GraphQLObjectType<Continent>({
  name: 'Continent',
  fields: () => ({
    code: { type: nonNull(GraphQLID) },
    countries: { type: listOf(CountryType) },
    name: { type: nonNull(GraphQLString) },
  }),
});

export const ContinentFilterInputType = new GraphQLInputObjectType({
  name: 'ContinentFilterInput',
  fields: { code: { type: StringQueryOperatorInputType } },
});

export const SubdivisionType = new GraphQLObjectType<Subdivision>({
  name: 'Subdivision',
  fields: {
    code: { type: nonNull(GraphQLID) },
    emoji: { type: GraphQLString },
    name: { type: nonNull(GraphQLString) },
  },
});

export const StateType: GraphQLObjectType<State> = new GraphQLObjectType<State>({
  name: 'State',
  fields: () => ({
    code: { type: GraphQLString },
    country: { type: nonNull(CountryType) },
    name: { type: nonNull(GraphQLString) },
  }),
});

export const CountryType: GraphQLObjectType<Country> = new GraphQLObjectType<Country>({
  name: 'Country',
  fields: () => ({
    awsRegion: { type: nonNull(GraphQLString) },
    capital: { type: GraphQLString },
    code: { type: nonNull(GraphQLID) },
    continent: { type: nonNull(ContinentType) },
    currencies: { type: listOf(GraphQLString) },
    currency: { type: GraphQLString },
    emoji: { type: nonNull(GraphQLString) },
    emojiU: { type: nonNull(GraphQLString) },
    languages: { type: listOf(LanguageType) },
    name: {
      type: nonNull(GraphQLString),
      args: { lang: { type: GraphQLString } },
      resolve: (country, args: { lang?: string | null }) => {
        const lang = args.lang;
        if (lang == null) return country.name;
        if (!LOCALE_SET.has(lang)) {
          throw new GraphQLError(`Invalid lang ${JSON.stringify(lang)}: expected one of ${LOCALE_LIST}`, {
            extensions: { code: 'VALIDATION_ERROR', argument: 'lang', validValues: LOCALES },
          });
        }
        return localizedName(country, lang);
      },
    },
    native: { type: nonNull(GraphQLString) },
    phone: { type: nonNull(GraphQLString) },
    phones: { type: listOf(GraphQLString) },
    states: { type: listOf(StateType) },
    subdivisions: { type: listOf(SubdivisionType) },
  }),
});

export const CountryFilterInputType = new GraphQLInputObjectType({
  name: 'CountryFilterInput',
  fields: {
    code: { type: StringQueryOperatorInputType },
    continent: { type: StringQueryOperatorInputType },
    currency: { type: StringQueryOperatorInputType },
    name: { type: StringQueryOperatorInputType },
  },
});

export const LanguageType: GraphQLObjectType<Language> = new GraphQLObjectType<Language>({
  name: 'Language',
  fields: () => ({
    code: { type: nonNull(GraphQLID) },
    countries: { type: listOf(CountryType) },
    name: { type: nonNull(GraphQLString) },
    native: { type: nonNull(GraphQLString) },
    rtl: { type: nonNull(GraphQLBoolean) },
  }),
});

export const LanguageFilterInputType = new GraphQLInputObjectType({
  name: 'LanguageFilterInput',
  fields: { code: { type: StringQueryOperatorInputType } },
});

type Filter<K extends string> = { filter?: Partial<Record<K, StringQueryOperatorInput | null>> | null };

/** The Query fields of the reference schema (federation.ts appends `_entities` and `_service`). */
export const queryFields: GraphQLFieldConfigMap<unknown, unknown> = {
  continent: {
    type: ContinentType,
    args: { code: { type: nonNull(GraphQLID) } },
    resolve: (_, args: { code: string }) => dataset.continent(args.code),
  },
  continents: {
    type: listOf(ContinentType),
    args: { filter: { type: ContinentFilterInputType, defaultValue: {} } },
    resolve: (_, args: Filter<'code'>) => applyFilter(dataset.continents, args.filter, (c) => c),
  },
  countries: {
    type: listOf(CountryType),
    args: { filter: { type: CountryFilterInputType, defaultValue: {} } },
    resolve: (_, args: Filter<'code' | 'continent' | 'currency' | 'name'>) => applyFilter(dataset.countries, args.filter, (c) => c.filterFields),
  },
  country: {
    type: CountryType,
    args: { code: { type: nonNull(GraphQLID) } },
    resolve: (_, args: { code: string }) => dataset.country(args.code),
  },
  language: {
    type: LanguageType,
    args: { code: { type: nonNull(GraphQLID) } },
    resolve: (_, args: { code: string }) => dataset.language(args.code),
  },
  languages: {
    type: listOf(LanguageType),
    args: { filter: { type: LanguageFilterInputType, defaultValue: {} } },
    resolve: (_, args: Filter<'code'>) => applyFilter(dataset.languages, args.filter, (l) => l),
  },
};

/** Named types in the order the reference SDL prints them. */
export const referenceTypes = [
  ContinentType,
  ContinentFilterInputType,
  CountryType,
  CountryFilterInputType,
  LanguageType,
  LanguageFilterInputType,
  StateType,
  StringQueryOperatorInputType,
  SubdivisionType,
];
