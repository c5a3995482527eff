// Deno: `deno serve` calls the default export's `fetch` (see the `serve` task in deno.json).
import countries from '../src/countries-endpoint.ts';
import { countriesSchema } from '../src/countries/index.ts';
import { withGraphQLWebSocket } from './websocket-deno.ts';

// WebSocket upgrades on /graphql speak graphql-transport-ws; everything else is the HTTP handler.
export default { fetch: withGraphQLWebSocket(countries.fetch, { schema: countriesSchema }) };
