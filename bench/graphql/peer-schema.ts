// The countries schema for the servers we compare against. The served schema defines @defer and
// @stream; graphql-js 17's `execute` refuses such a schema (only its experimental incremental
// executor runs one), so on 17 the peers, which call `execute`, get the same schema without them.
import { GraphQLSchema } from 'graphql';
import { countriesSchema } from '../../src/countries/index.ts';
import { graphqlMajor } from '../../src/execution/graphql-compat.ts';

export const peerSchema: GraphQLSchema =
  graphqlMajor >= 17
    ? new GraphQLSchema({
        ...countriesSchema.toConfig(),
        directives: countriesSchema.getDirectives().filter((directive) => directive.name !== 'defer' && directive.name !== 'stream'),
      })
    : countriesSchema;
