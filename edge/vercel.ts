// Vercel edge function. Vercel routes by file (`api/graphql.js` answers on /api/graphql), so the
// handler answers on whatever path reaches it.
import { createCountriesHandler } from '../src/countries-endpoint.ts';

export const config = { runtime: 'edge' };

export default createCountriesHandler({ path: null });
