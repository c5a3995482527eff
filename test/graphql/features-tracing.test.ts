// OpenTelemetry tracing through the handler option, recorded with the SDK's in-memory exporter: one
// server span per request named as OpenTelemetry's GraphQL server conventions say (the operation
// type; the name only when asked), with graphql.operation.type, graphql.operation.name and a bounded
// graphql.document, and parse, validate and execute as its children.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { buildSchema } from 'graphql';
import { createCountriesHandler, createGraphQLHandler } from '../../src/index.ts';
import type { TracingOptions } from '../../src/handler/tracing.ts';

function setup() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { exporter, tracer: provider.getTracer('skiff-test') };
}

for (const compiledExecution of [true, false]) {
  test(`tracing: a span per request with parse, validate and execute children (compiled execution ${compiledExecution ? 'on' : 'off'})`, async () => {
    const { exporter, tracer } = setup();
    const handler = createCountriesHandler({ tracer, compiledExecution });
    const res = await handler(
      new Request('http://x/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
        body: JSON.stringify({ query: 'query CountryName($c: ID!) { country(code: $c) { name } }', variables: { c: 'JP' } }),
      }),
    );
    assert.deepEqual(await res.json(), { data: { country: { name: 'Japan' } } });
    const spans = exporter.getFinishedSpans();
    const root = spans.find((s) => s.kind === SpanKind.SERVER)!;
    assert.ok(root, 'a server span');
    assert.equal(root.name, 'query', 'named by the operation type: the client-chosen name is not in it by default');
    assert.equal(root.attributes['graphql.operation.name'], 'CountryName');
    assert.equal(root.attributes['graphql.operation.type'], 'query');
    assert.equal(root.attributes['graphql.document'], 'query CountryName($c: ID!) { country(code: $c) { name } }');
    assert.equal(root.attributes['http.response.status_code'], 200);
    // The caller's trace goes on: a W3C traceparent header makes the request span its child.
    assert.equal(root.spanContext().traceId, '4bf92f3577b34da6a3ce929d0e0e4736');
    assert.equal(root.parentSpanContext?.spanId, '00f067aa0ba902b7');
    const children = spans.filter((s) => s !== root);
    assert.deepEqual(
      children.map((s) => s.name),
      ['graphql.parse', 'graphql.validate', 'graphql.execute'],
    );
    for (const child of children) {
      assert.equal(child.parentSpanContext?.spanId, root.spanContext().spanId, `${child.name} is a child of the request span`);
      assert.equal(child.spanContext().traceId, root.spanContext().traceId);
    }
  });
}

test('tracing: errors and non-GraphQL requests end their span too; no tracer, no spans', async () => {
  const { exporter, tracer } = setup();
  const handler = createCountriesHandler({
    tracer,
    context: () => {
      throw new Error('context failed');
    },
    onInternalError: () => {},
  });
  assert.equal((await handler(new Request('http://x/graphql?query={__typename}'))).status, 500);
  const plain = createCountriesHandler({ tracer });
  assert.equal((await plain(new Request('http://x/elsewhere'))).status, 404);
  assert.equal((await plain(new Request('http://x/graphql?query={nope}', { headers: { accept: 'application/graphql-response+json' } }))).status, 400);
  const roots = exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.SERVER);
  assert.deepEqual(
    roots.map((s) => s.attributes['http.response.status_code']),
    [500, 404, 400],
  );
  assert.equal(roots[0].status.code, SpanStatusCode.ERROR);
  assert.equal(roots[2].name, 'GraphQL Operation', 'an invalid document names no operation');

  const quiet = setup();
  await createCountriesHandler()(new Request('http://x/graphql?query={__typename}'));
  assert.equal(quiet.exporter.getFinishedSpans().length, 0);
});

test('tracing: the operation name in the span name when asked; graphql.document cut to its bound, or left out', async () => {
  const query = `mutation Nothing { __typename }`;
  const withMutation = buildSchema('type Query { a: Int } type Mutation { b: Int }');
  const long = `query Long { __typename }\n# ${'padding '.repeat(400)}`;
  const run = async (tracing: TracingOptions, text: string) => {
    const { exporter, tracer } = setup();
    // The countries schema has no mutation type (graphql 17 refuses a mutation there at validation).
    const handler = text === query ? createGraphQLHandler({ schema: withMutation, tracer, tracing }) : createCountriesHandler({ tracer, tracing });
    const response = await handler(
      new Request('http://x/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: text }) }),
    );
    await response.text();
    return exporter.getFinishedSpans().find((s) => s.kind === SpanKind.SERVER)!;
  };
  const named = await run({ operationNameInSpanName: true }, 'query CountryName { country(code: "JP") { name } }');
  assert.equal(named.name, 'query CountryName');
  const anonymous = await run({ operationNameInSpanName: true }, '{ __typename }');
  assert.equal(anonymous.name, 'query');
  assert.equal(anonymous.attributes['graphql.operation.name'], undefined);

  const mutation = await run({}, query);
  assert.equal(mutation.attributes['graphql.operation.type'], 'mutation');

  assert.ok(long.length > 2048);
  const cut = await run({}, long);
  assert.equal(cut.attributes['graphql.document'], `${long.slice(0, 2048)}…`, 'cut at 2048 characters by default');
  const shorter = await run({ maxDocumentLength: 100 }, long);
  assert.equal(shorter.attributes['graphql.document'], `${long.slice(0, 100)}…`);
  const none = await run({ maxDocumentLength: 0 }, long);
  assert.equal('graphql.document' in none.attributes, false);
  assert.equal(none.attributes['graphql.operation.name'], 'Long');
});
