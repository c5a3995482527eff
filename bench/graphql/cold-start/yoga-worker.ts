// graphql-yoga on the countries schema, as its edge guide sets it up: the yoga instance is the fetch handler.
import { createYoga } from 'graphql-yoga';
import { countriesSchema } from '../../../src/countries/index.ts';

const yoga = createYoga({ schema: countriesSchema, graphqlEndpoint: '/graphql', logging: false, landingPage: false });

export default { fetch: (request: Request) => yoga.fetch(request) };
