// Bun: `bun dist/edge/bun.js` serves the default export (Bun.serve options) on $PORT (default 3000),
// HTTP and GraphQL over WebSocket on /graphql alike.
import countries from '../src/countries-endpoint.ts';
import { countriesSchema } from '../src/countries/index.ts';
import { withGraphQLWebSocket } from './websocket-bun.ts';

const { fetch, websocket } = withGraphQLWebSocket(countries.fetch, { schema: countriesSchema });

export default { fetch, websocket };
