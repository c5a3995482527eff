// OpenTelemetry spans for the embedder's tracer, as OpenTelemetry's GraphQL server conventions name
// them: one server span per request, named after the operation type (`query`; `GraphQL Operation`
// until the type is known), with graphql.operation.type, graphql.operation.name and graphql.document,
// and parse, validate and execute as its children, continuing the caller's trace from a W3C
// `traceparent` header. The embedder brings the API, the SDK and the
// exporter; this file uses only the types, so bundles that never trace carry none of it. Parents are
// passed explicitly, so no context manager (AsyncLocalStorage) is needed on any runtime.
import type { Context, Span, SpanContext, Tracer } from '@opentelemetry/api';
import { getOperationAST, type DocumentNode } from 'graphql';

// Numeric values of the API's enums (SpanKind.SERVER, SpanStatusCode.ERROR), fixed by the specification.
const SERVER = 1;
const ERROR = 2;
/** The key under which the API keeps the current span in a Context (`createContextKey` is `Symbol.for`). */
const SPAN_KEY = Symbol.for('OpenTelemetry Context Key SPAN');

/** An immutable Context holding at most a parent span: what a tracer's startSpan reads. */
class ParentContext implements Context {
  constructor(private readonly values: ReadonlyMap<symbol, unknown> = new Map()) {}
  getValue(key: symbol): unknown {
    return this.values.get(key);
  }
  setValue(key: symbol, value: unknown): Context {
    return new ParentContext(new Map(this.values).set(key, value));
  }
  deleteValue(key: symbol): Context {
    const next = new Map(this.values);
    next.delete(key);
    return new ParentContext(next);
  }
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The caller's span from a W3C traceparent header, as a parent context; an empty context without one. */
function incoming(request: Request): Context {
  const m = TRACEPARENT.exec(request.headers.get('traceparent')?.trim() ?? '');
  if (!m || /^0+$/.test(m[1]) || /^0+$/.test(m[2])) return new ParentContext();
  const remote: SpanContext = { traceId: m[1], spanId: m[2], traceFlags: Number.parseInt(m[3], 16), isRemote: true };
  return new ParentContext().setValue(SPAN_KEY, { spanContext: () => remote });
}

export interface TracingOptions {
  /**
   * Name spans `{type} {operationName}` (`query CountryName`) rather than `{type}`. Off by default:
   * the operation name comes from the client, and in a span name its cardinality is unbounded.
   */
  operationNameInSpanName?: boolean;
  /**
   * Characters of the document recorded as `graphql.document`; a longer one is cut there and ends in
   * "…". 0 records none (documents that may carry secrets inline). Default 2048.
   */
  maxDocumentLength?: number;
}

export interface RequestTrace {
  tracer: Tracer;
  span: Span;
  /** The context the child spans hang off. */
  parent: Context;
  options: TracingOptions;
}

export function startRequestSpan(tracer: Tracer, request: Request, pathname: string, options: TracingOptions = {}): RequestTrace {
  const span = tracer.startSpan(
    'GraphQL Operation',
    { kind: SERVER, attributes: { 'http.request.method': request.method, 'url.path': pathname } },
    incoming(request),
  );
  return { tracer, span, parent: new ParentContext().setValue(SPAN_KEY, span), options };
}

export function endRequestSpan(t: RequestTrace, response: Response): void {
  t.span.setAttribute('http.response.status_code', response.status);
  if (response.status >= 500) t.span.setStatus({ code: ERROR, message: `HTTP ${response.status}` });
  t.span.end();
}

export function failRequestSpan(t: RequestTrace, error: unknown): void {
  t.span.recordException(error instanceof Error ? error : String(error));
  t.span.setStatus({ code: ERROR, message: error instanceof Error ? error.message : String(error) });
  t.span.end();
}

/** Runs `fn` inside a child span; a promise ends the span when it settles. */
export function childSpan<T>(t: RequestTrace, name: string, fn: () => T): T {
  const span = t.tracer.startSpan(name, undefined, t.parent);
  let result: T;
  try {
    result = fn();
  } catch (error) {
    span.recordException(error instanceof Error ? error : String(error));
    span.setStatus({ code: ERROR });
    span.end();
    throw error;
  }
  if (result instanceof Promise) {
    result.then(
      () => span.end(),
      (error: unknown) => {
        span.setStatus({ code: ERROR, message: error instanceof Error ? error.message : String(error) });
        span.end();
      },
    );
  } else {
    span.end();
  }
  return result;
}

const DEFAULT_MAX_DOCUMENT_LENGTH = 2048;

/**
 * Names the request span after the operation's type and records OpenTelemetry's GraphQL attributes:
 * the operation's type and name, and its document (`query`, the text as sent), cut to the bound.
 */
export function describeOperation(t: RequestTrace | undefined, document: DocumentNode, operationName: string | null | undefined, query: string): void {
  if (t === undefined) return;
  const operation = getOperationAST(document, operationName);
  if (!operation) return;
  const name = operation.name?.value;
  t.span.setAttribute('graphql.operation.type', operation.operation);
  if (name) t.span.setAttribute('graphql.operation.name', name);
  const max = t.options.maxDocumentLength ?? DEFAULT_MAX_DOCUMENT_LENGTH;
  if (max > 0) t.span.setAttribute('graphql.document', query.length > max ? `${query.slice(0, max)}…` : query);
  t.span.updateName(name && t.options.operationNameInSpanName ? `${operation.operation} ${name}` : operation.operation);
}
