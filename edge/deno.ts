// Deno: `deno serve` calls the default export's `fetch` (see the `serve` task in deno.json).
import countries from '../src/index.ts';

export default countries;
