// The countries example schema: the public countries API, served from the embedded
// dataset, plus its federation surface. Web standards only: this runs on every edge runtime.
import { GraphQLObjectType, GraphQLSchema, printSchema, specifiedDirectives } from 'graphql';
import { AnyScalar, EntityUnion, federationQueryFields, KeyDirective, ServiceType, subgraphSDL } from './federation.ts';
import { queryFields, referenceTypes } from './schema.ts';

function withQuery(query: GraphQLObjectType) {
  // Query sits in its alphabetical place, so printed SDL and introspection keep the reference order.
  const types = [...referenceTypes];
  types.splice(types.findIndex((t) => t.name > 'Query'), 0, query);
  return types;
}

const referenceQuery = new GraphQLObjectType({ name: 'Query', fields: queryFields });

/** The schema exactly as the public API defines it (no federation fields). */
export const countriesReferenceSchema = new GraphQLSchema({ query: referenceQuery, types: withQuery(referenceQuery) });

/** Its SDL as graphql-js prints it. */
export const countriesReferenceSDL = printSchema(countriesReferenceSchema);

/** What `_service { sdl }` answers: the SDL with `@key(fields: "code")` on the entity types. */
export const countriesSubgraphSDL = subgraphSDL(countriesReferenceSDL);

const query = new GraphQLObjectType({
  name: 'Query',
  fields: { ...queryFields, ...federationQueryFields(countriesSubgraphSDL) },
});

/** The served schema: the reference schema plus `_entities`, `_service` and `@key`. */
export const countriesSchema = new GraphQLSchema({
  query,
  types: [...withQuery(query), AnyScalar, EntityUnion, ServiceType],
  directives: [...specifiedDirectives, KeyDirective],
});

/** The served schema's SDL. */
export const countriesSDL = printSchema(countriesSchema);

export { dataset } from './dataset.ts';
export type { Continent, Country, Language, State, Subdivision } from './dataset.ts';
export { LOCALES } from './dataset.ts';
export { compileSafeRegex, MAX_PATTERN_LENGTH, MAX_PROGRAM_SIZE, RegexError } from './safe-regex.ts';
