// Cloudflare Workers (workerd): a module worker; wrangler.toml points `main` at the bundle of this file.
import countries from '../src/index.ts';

export default {
  fetch(request: Request): Promise<Response> {
    return countries.fetch(request);
  },
};
