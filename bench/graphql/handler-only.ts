// The handler alone, in this process, with the Request and Response classes the Node server uses
// (@hono/node-server's): CPU per call of `handler.fetch(request, body)` for every bench query, the
// body handed over as the server's body reader does. What is left of a request's cost in the server
// is Node's HTTP server, the socket and Hono.
//   npx tsx bench/graphql/handler-only.ts [--calls N] [--rounds N]
import { getRequestListener } from '@hono/node-server';
import { createCountriesHandler } from '../../src/index.ts';
import { benchQueries, postBody, requestFor } from './queries.ts';

const argv = process.argv.slice(2);
if (argv.includes('--help')) {
  console.log(
    "usage: npx tsx bench/graphql/handler-only.ts [--calls N (20000)] [--rounds N (5)]\nPrints the best round's CPU µs per call for each bench query.",
  );
  process.exit(0);
}
function option(name: string, fallback: number): number {
  const at = argv.indexOf(name);
  if (at === -1) return fallback;
  const value = Number(argv[at + 1]);
  if (!Number.isInteger(value) || value < 1) {
    console.error(`${name} must be a positive integer (got ${argv[at + 1]})`);
    process.exit(2);
  }
  return value;
}
const calls = option('--calls', 20_000);
const rounds = option('--rounds', 5);

// Installs @hono/node-server's Request and Response as the globals, as the Node server does.
getRequestListener(() => new Response(''));
const handler = createCountriesHandler();
const settle = () => new Promise((resolve) => setTimeout(resolve, 200));

for (const q of benchQueries) {
  const requests = Array.from({ length: 64 }, () => requestFor(q));
  const body = q.method === 'POST' ? postBody(q) : undefined;
  const n = q.large ? Math.max(1, Math.floor(calls / 10)) : calls;
  const loop = async () => {
    for (let i = 0; i < n; i++) {
      const answer = handler.fetch(requests[i & 63], body);
      if (answer instanceof Promise) await answer;
    }
  };
  // The compiled plans load on the first requests; the event loop has to turn for them to arrive.
  await loop();
  await settle();
  await loop();
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < rounds; round++) {
    const before = process.cpuUsage();
    await loop();
    const used = process.cpuUsage(before);
    best = Math.min(best, (used.user + used.system) / n);
  }
  console.log(`${q.label.padEnd(20)} ${best.toFixed(2).padStart(8)} µs`);
}
