// OpenTelemetry tracing through the handler option, recorded with the SDK's in-memory exporter: one
// server span per request named after the operation, parse, validate and execute as its children.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { createCountriesHandler } from '../../src/index.ts';

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
    assert.equal(root.name, 'query CountryName');
    assert.equal(root.attributes['graphql.operation.name'], 'CountryName');
    assert.equal(root.attributes['graphql.operation.type'], 'query');
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
