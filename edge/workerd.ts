// Cloudflare Workers (workerd): a module worker; wrangler.toml points `main` at the bundle of this file.
import countries from '../src/countries-endpoint.ts';
import { countriesSchema } from '../src/countries/index.ts';
import { withGraphQLWebSocket } from './websocket-workerd.ts';

// WebSocket upgrades on /graphql speak graphql-transport-ws; everything else is the HTTP handler.
const fetch = withGraphQLWebSocket(countries.fetch, { schema: countriesSchema });

export default {
  fetch(request: Request): Response | Promise<Response> {
    return fetch(request);
  },
};
