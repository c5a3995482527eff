// The countries example schema: the public countries API, served from the embedded dataset, plus
// its federation surface. Web standards only: this runs on every edge runtime.
import { GraphQLObjectType, GraphQLSchema, printSchema, specifiedDirectives } from 'graphql';
import { GraphQLDeferDirective, GraphQLStreamDirective } from '../streams/incremental-directives.ts';
import { AnyScalar, EntityUnion, federationQueryFields, KeyDirective, ServiceType, subgraphSDL } from './federation.ts';
import { queryFields, referenceTypes } from './schema.ts';

function withQuery(query: GraphQLObjectType) {
  // Query sits in its alphabetical place, so printed SDL and introspection keep the reference order.
  const types = [...referenceTypes];
  types.splice(
    types.findIndex((t) => t.name > 'Query'),
    0,
    query,
  );
  return types;
}

function buildReferenceSchema(): GraphQLSchema {
  const query = new GraphQLObjectType({ name: 'Query', fields: queryFields });
  return new GraphQLSchema({ query, types: withQuery(query) });
}

// Printing SDL is for `_service { sdl }` and tooling: a bundle prints it on the first `_service`
// query, not at start-up (the exports below are dropped from bundles that do not import them).
let printedSubgraphSDL: string | undefined;
function subgraphSDLOnce(): string {
  return (printedSubgraphSDL ??= subgraphSDL(printSchema(buildReferenceSchema())));
}

/** The schema exactly as the public API defines it (no federation fields). */
export const countriesReferenceSchema = /* @__PURE__ */ buildReferenceSchema();

/** Its SDL as graphql-js prints it. */
export const countriesReferenceSDL = /* @__PURE__ */ printSchema(countriesReferenceSchema);

/** What `_service { sdl }` answers: the SDL with `@key(fields: "code")` on the entity types. */
export const countriesSubgraphSDL = /* @__PURE__ */ subgraphSDLOnce();

const query = new GraphQLObjectType({
  name: 'Query',
  fields: { ...queryFields, ...federationQueryFields(subgraphSDLOnce) },
});

/**
 * The served schema: the reference schema plus `_entities`, `_service` and `@key`, and `@defer` and
 * `@stream` defined here rather than added by the handler, which would build and validate a second
 * schema at every cold start.
 */
export const countriesSchema = new GraphQLSchema({
  query,
  types: [...withQuery(query), AnyScalar, EntityUnion, ServiceType],
  directives: [...specifiedDirectives, KeyDirective, GraphQLDeferDirective, GraphQLStreamDirective],
});

/** The served schema's SDL. */
export const countriesSDL = /* @__PURE__ */ printSchema(countriesSchema);

export { dataset } from './dataset.ts';
export type { Continent, Country, Language, State, Subdivision } from './dataset.ts';
export { LOCALES } from './dataset.ts';
export { compileSafeRegex, MAX_PATTERN_LENGTH, MAX_PROGRAM_SIZE, RegexError } from './safe-regex.ts';
