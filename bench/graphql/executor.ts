// `npx tsx bench/graphql/executor.ts`: execution alone, in this process, for the bench queries:
// the compiled plan (src/execution) against graphql-jit and graphql-js, each producing the JSON
// text of the response. CPU time (user + system) per operation, best of several rounds, so other
// load on the machine inflates it less than wall time would.
import { parse } from 'graphql';
import { emptyVariables, executeWhole } from '../../src/execution/graphql-compat.ts';
import { compileQuery, isCompiledQuery } from 'graphql-jit';
import { countriesSchema } from '../../src/countries/index.ts';
import { executePlan } from '../../src/execution/execute-plan.ts';
import { planOperation } from '../../src/execution/plan.ts';
import { Q1, Q2 } from './queries.ts';

function cpuPerOperation(operations: number, rounds: number, run: () => string): number {
  let best = Infinity;
  let sink = 0;
  for (let round = 0; round < rounds; round++) {
    const start = process.cpuUsage();
    for (let i = 0; i < operations; i++) sink += run().length;
    const used = process.cpuUsage(start);
    best = Math.min(best, (used.user + used.system) / operations);
  }
  if (sink < 0) console.log(sink); // keeps the results observable
  return best;
}

for (const [label, query, operations] of [
  ['Q1', Q1, 20_000],
  ['Q2', Q2, 300],
] as const) {
  const document = parse(query);
  const plan = planOperation(countriesSchema, document, undefined)!;
  const jit = compileQuery(countriesSchema, document);
  if (!isCompiledQuery(jit)) throw new Error('graphql-jit could not compile the query');
  const runners: Record<string, () => string> = {
    'compiled plan': () => `{"data":${executePlan(plan, countriesSchema, undefined, undefined, emptyVariables).data}}`,
    'graphql-jit': () => jit.stringify(jit.query(undefined, undefined, {}) as never),
    'graphql-js': () => JSON.stringify(executeWhole({ schema: countriesSchema, document })),
  };
  const expected = runners['graphql-js']();
  for (const [name, run] of Object.entries(runners)) {
    if (JSON.stringify(JSON.parse(run())) !== expected) console.log(`  (${name} answers ${label} differently)`);
    run(); // warm up
    console.log(`${label} ${name.padEnd(14)} ${cpuPerOperation(operations, 7, run).toFixed(1).padStart(8)} µs CPU per operation`);
  }
}
