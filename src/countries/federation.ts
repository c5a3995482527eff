// The Apollo Federation (v1-style subgraph) surface, written directly on graphql-js because
// @apollo/subgraph pulls in Node built-ins that workerd cannot load: `_service { sdl }` returns
// this subgraph's SDL with `@key(fields: "code")` on Country, Continent and Language, and
// `_entities(representations:)` turns `{ __typename, code }` references into those objects.
import {
  DirectiveLocation,
  GraphQLDirective,
  GraphQLError,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLScalarType,
  GraphQLString,
  GraphQLUnionType,
  valueFromASTUntyped,
  type GraphQLFieldConfigMap,
} from 'graphql';
import { dataset } from './dataset.ts';
import { ContinentType, CountryType, LanguageType } from './schema.ts';

export const ENTITY_TYPE_NAMES = ['Continent', 'Country', 'Language'] as const;

/** `directive @key(fields: String!) repeatable on OBJECT | INTERFACE` */
export const KeyDirective = new GraphQLDirective({
  name: 'key',
  isRepeatable: true,
  locations: [DirectiveLocation.OBJECT, DirectiveLocation.INTERFACE],
  args: { fields: { type: new GraphQLNonNull(GraphQLString) } },
});

/** `_Any`: an entity representation, passed through as the JSON object it is. */
export const AnyScalar = new GraphQLScalarType({
  name: '_Any',
  serialize: (value) => value,
  parseValue: (value) => value,
  parseLiteral: (ast, variables) => valueFromASTUntyped(ast, variables),
});

export const ServiceType = new GraphQLObjectType<{ sdl: string }>({
  name: '_Service',
  fields: { sdl: { type: GraphQLString } },
});

export const EntityUnion = new GraphQLUnionType({
  name: '_Entity',
  types: [ContinentType, CountryType, LanguageType],
  // Dataset objects carry `__typename`, which graphql-js' default type resolver reads.
});

const lookups: Record<(typeof ENTITY_TYPE_NAMES)[number], (code: string) => object | null> = {
  Continent: dataset.continent,
  Country: dataset.country,
  Language: dataset.language,
};

/** One representation -> the entity, null for an unknown code, an Error for a bad reference. */
export function resolveEntity(representation: unknown): object | null | GraphQLError {
  if (typeof representation !== 'object' || representation === null || Array.isArray(representation)) {
    return new GraphQLError('Each representation must be an object with "__typename" and "code"', {
      extensions: { code: 'BAD_USER_INPUT' },
    });
  }
  const { __typename: typename, code } = representation as { __typename?: unknown; code?: unknown };
  if (typeof typename !== 'string' || !Object.hasOwn(lookups, typename)) {
    return new GraphQLError(`Unknown entity type ${JSON.stringify(typename)} in representation: expected one of ${ENTITY_TYPE_NAMES.join(', ')}`, {
      extensions: { code: 'BAD_USER_INPUT' },
    });
  }
  if (typeof code !== 'string') {
    return new GraphQLError(`The ${typename} representation needs its key "code" as a string`, {
      extensions: { code: 'BAD_USER_INPUT' },
    });
  }
  return lookups[typename as keyof typeof lookups](code);
}

/** The subgraph SDL: the schema printed without the federation plumbing, entities keyed. */
export function subgraphSDL(printedSchema: string): string {
  const keyed = printedSchema.replace(new RegExp(`^type (${ENTITY_TYPE_NAMES.join('|')}) \\{`, 'gm'), 'type $1 @key(fields: "code") {');
  if ((keyed.match(/@key\(/g) ?? []).length !== ENTITY_TYPE_NAMES.length) {
    throw new Error('federation: could not place @key on every entity type');
  }
  return keyed;
}

/** The Query fields federation adds (an errored entry answers null with its error at its index). */
export function federationQueryFields(sdl: () => string): GraphQLFieldConfigMap<unknown, unknown> {
  return {
    _entities: {
      type: new GraphQLNonNull(new GraphQLList(EntityUnion)),
      args: { representations: { type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(AnyScalar))) } },
      resolve: (_, args: { representations: readonly unknown[] }) => args.representations.map(resolveEntity),
    },
    _service: {
      type: new GraphQLNonNull(ServiceType),
      resolve: () => ({ sdl: sdl() }),
    },
  };
}
