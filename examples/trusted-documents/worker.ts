// The countries API running only trusted documents, as a Cloudflare module Worker (the same entry
// serves Deno and Vercel's edge): the manifest is imported as JSON, so the bundle carries it and
// nothing is read at start. Replace persisted-query-manifest.json with the one your client build
// writes (`npx generate-persisted-query-manifest`, or Relay's persisted_queries.json).
import { createCountriesHandler } from '../../src/countries-endpoint.ts';
import manifest from './persisted-query-manifest.json' with { type: 'json' };

const handler = createCountriesHandler({ trustedDocuments: { manifest } });

export default {
  fetch(request: Request): Response | Promise<Response> {
    return handler.fetch(request);
  },
};
