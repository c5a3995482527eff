// graphql-yoga on the countries schema, as its edge guide sets it up: the yoga instance is the fetch handler.
import { createYoga } from 'graphql-yoga';
import { peerSchema } from '../peer-schema.ts';

const yoga = createYoga({ schema: peerSchema, graphqlEndpoint: '/graphql', logging: false, landingPage: false });

export default { fetch: (request: Request) => yoga.fetch(request) };
