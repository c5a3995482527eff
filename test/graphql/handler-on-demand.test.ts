// What a fresh isolate runs: the handler answers plain queries without loading the parts few requests
// need, loads each of those once when a request first needs it, and compiles plans only for documents
// that come again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { DocumentNode } from 'graphql';
import { createCountriesHandler } from '../../src/index.ts';
import { countriesSchema } from '../../src/countries/index.ts';
import { createCompiledExecution, type CompiledExecution } from '../../src/execution/compiled-execution.ts';
import { createDocumentCache } from '../../src/handler/document-cache.ts';
import { applicationJson } from '../../src/handler/negotiation.ts';
import { onDemand, whenLoaded, type OnDemand } from '../../src/handler/on-demand.ts';
import { createOperationRunner } from '../../src/handler/operation.ts';
import type { Answer } from '../../src/handler/responses.ts';

const Q1 = '{ country(code:"BR"){ name capital currency languages{ name } } }';

test('onDemand builds once for concurrent callers, answers synchronously after, and tries again after a failure', async () => {
  let builds = 0;
  let fail = true;
  const part = onDemand(async () => {
    builds++;
    if (fail) throw new Error('chunk missing');
    return { built: builds };
  });
  assert.equal(part.value, undefined);
  await assert.rejects(Promise.all([part.load(), part.load()]), /chunk missing/);
  assert.equal(builds, 1, 'one build for both callers');
  assert.equal(part.value, undefined);
  fail = false;
  const [a, b] = await Promise.all([part.load(), part.load()]);
  assert.equal(builds, 2, 'built again after the failure, once');
  assert.equal(a, b);
  assert.equal(part.value, a);
  // Once loaded, the value is used without a promise in between.
  const used = whenLoaded(part, (value) => value.built);
  assert.equal(used, 2);
});

/** A compiled execution whose loading and planning are counted. */
function countedCompiled(): { part: OnDemand<CompiledExecution>; loads: () => number; plans: () => number } {
  let loads = 0;
  let plans = 0;
  const part = onDemand(async () => {
    loads++;
    const real = createCompiledExecution(countriesSchema);
    return {
      planFor(document: DocumentNode, operationName: string | null | undefined) {
        plans++;
        return real.planFor(document, operationName);
      },
      run: real.run,
    };
  });
  return { part, loads: () => loads, plans: () => plans };
}

test('compiled execution is loaded when a document runs a second time; until then graphql-js runs it, with the same answer', async () => {
  const compiled = countedCompiled();
  const run = createOperationRunner({
    schema: countriesSchema,
    documents: createDocumentCache(16, undefined),
    validationRules: [],
    rootValue: undefined,
    context: undefined,
    execute: undefined,
    timeoutMs: undefined,
    compiled: compiled.part,
    formatError: (error) => error,
    streams: null,
    incremental: null,
    onLoadError: (error) => assert.fail(String(error)),
  });
  const request = new Request('http://localhost/graphql');
  const answer = (query: string) => run(request, { query }, applicationJson) as Answer;

  const first = answer(Q1);
  assert.equal(compiled.loads(), 0, 'a document run once loads nothing');
  assert.equal(answer('{ continents { code } }').status, 200);
  assert.equal(compiled.loads(), 0, 'nor does another document run once');
  const second = answer(Q1);
  assert.equal(compiled.loads(), 1, 'the document that came again starts the load');
  assert.equal(compiled.plans(), 0, 'and still runs on graphql-js');
  await compiled.part.load();
  const third = answer(Q1);
  assert.equal(compiled.plans(), 1, 'once loaded, the document runs on its plan');
  answer(Q1);
  assert.equal(compiled.loads(), 1, 'loaded once');
  for (const later of [second, third]) {
    assert.equal(later.status, first.status);
    assert.deepEqual(later.headers, first.headers);
    assert.equal(later.body, first.body, 'graphql-js and the plan answer byte for byte alike');
  }
});

test("a fresh handler's first query is answered without waiting for any part to load", async () => {
  const handler = createCountriesHandler();
  const response = handler.fetch(new Request(`http://localhost/graphql?query=${encodeURIComponent(Q1)}`));
  assert.ok(!(response instanceof Promise), 'answered synchronously: nothing was imported on the way');
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), { data: { country: { name: 'Brazil', capital: 'Brasília', currency: 'BRL', languages: [{ name: 'Portuguese' }] } } });
  // Nothing streams yet, and the stats say so without loading the subscription machinery.
  assert.deepEqual(handler.subscriptionStats(), { executions: 0, members: 0, open: 0 });
});
