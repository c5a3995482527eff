// The GraphQL half of a request: from admitted parameters to an answer. Parse (cached), build the
// context, validate (cached), pick the operation, execute it (the compiled plan where there is one,
// else graphql-js) and serialize the result. The steps, their order and their answers are those of
// graphql-http's handler, so GraphQL-over-HTTP behaviour is unchanged wherever a request is executed.
import {
  getOperationAST,
  GraphQLError,
  specifiedRules,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type GraphQLSchema,
  type ValidationRule,
} from 'graphql';
import type { CompiledExecution, OperationPlan } from '../execution/compiled-execution.ts';
import { executeWhole } from '../execution/graphql-compat.ts';
import { boundExecution, settleWithin } from '../execution/execution-bounds.ts';
import type { HttpSubscriptions } from '../streams/http-subscriptions.ts';
import type { StreamFormat } from '../streams/stream-formats.ts';
import type { IncrementalDelivery } from '../streams/incremental-delivery.ts';
import { usesIncrementalDelivery } from '../streams/incremental-directives.ts';
import type { DocumentCache } from './document-cache.ts';
import { whenLoaded, type OnDemand } from './on-demand.ts';
import type { GraphQLMediaType } from './negotiation.ts';
import type { FormatError, RequestParams } from './options.ts';
import { errorBody, errorsAnswer, resultAnswer, thrownAnswer, writtenAnswer, type Answer } from './responses.ts';
import { childSpan, describeOperation, type RequestTrace } from './tracing.ts';

export interface OperationOptions {
  schema: GraphQLSchema;
  documents: DocumentCache;
  /** Rules run after graphql-js's `specifiedRules`. */
  validationRules: readonly ValidationRule[];
  rootValue: unknown;
  /** A context value, or a factory called with the web request and the parameters. */
  context: unknown;
  /** Replaces graphql-js `execute`. */
  execute: ((args: ExecutionArgs) => ExecutionResult | Promise<ExecutionResult>) | undefined;
  /** `execution.timeoutMs`, checked. */
  timeoutMs: number | undefined;
  /**
   * Plans for valid queries, or null to execute everything with graphql-js. Loaded once a document
   * runs a second time, so a cold start never waits for the plan generator.
   */
  compiled: OnDemand<CompiledExecution> | null;
  formatError: FormatError;
  /** Subscriptions over SSE and multipart (loaded by the first), or null when they are off. */
  streams: OnDemand<HttpSubscriptions> | null;
  /** @defer and @stream for clients that accept a stream (loaded by the first), or null when they are off. */
  incremental: OnDemand<IncrementalDelivery> | null;
  /** Told when compiled execution could not be loaded (graphql-js then runs every query). */
  onLoadError(error: unknown): void;
}

/** How the client asked for a stream: the format, and whether it accepts nothing but a stream. */
export interface StreamRequest {
  format: StreamFormat;
  only: boolean;
}

/**
 * Answers admitted parameters; `mediaType` is the negotiated response type. Throws (or rejects with)
 * unexpected failures only: a throwing context factory or executor, which the handler makes a 500.
 */
export type RunOperation = (
  request: Request,
  params: RequestParams,
  mediaType: GraphQLMediaType,
  trace?: RequestTrace,
  stream?: StreamRequest | null,
) => Answer | Promise<Answer>;

export function createOperationRunner(options: OperationOptions): RunOperation {
  const { schema, documents, rootValue, context, compiled, formatError, streams, incremental } = options;
  const execute = options.execute ?? executeWhole;
  const rules = [...specifiedRules, ...options.validationRules];
  // Until compiled execution is loaded, the documents graphql-js has run: one that comes again starts
  // the load, so a cold start (and a document run once) never pays for the plan generator.
  let interpreted: WeakSet<DocumentNode> | undefined = new WeakSet();

  /** The document's plan once compiled execution is loaded, else null (graphql-js runs it). */
  function planFor(document: DocumentNode, operationName: string | null | undefined): OperationPlan | null {
    const execution = compiled!.value;
    if (execution !== undefined) return execution.planFor(document, operationName);
    if (interpreted !== undefined) {
      if (!interpreted.has(document)) interpreted.add(document);
      else {
        interpreted = undefined;
        compiled!.load().catch(options.onLoadError);
      }
    }
    return null;
  }

  function withContext(
    request: Request,
    params: RequestParams,
    mediaType: GraphQLMediaType,
    document: DocumentNode,
    contextValue: unknown,
    trace: RequestTrace | undefined,
    stream: StreamRequest | null | undefined,
  ): Answer | Promise<Answer> {
    const errors =
      trace === undefined
        ? documents.validate(schema, document, rules)
        : childSpan(trace, 'graphql.validate', () => documents.validate(schema, document, rules));
    if (errors.length > 0) return errorsAnswer(errors, mediaType, formatError);
    describeOperation(trace, document, params.operationName, params.query);
    // @defer/@stream to a client that takes a stream: the incremental executor (incremental-delivery.ts).
    const incrementally = incremental !== null && stream != null && usesIncrementalDelivery(document);
    const plan = incrementally || compiled === null ? null : planFor(document, params.operationName);
    if (plan !== null) {
      const answer =
        trace === undefined
          ? runPlan(plan, params, mediaType, contextValue)
          : childSpan(trace, 'graphql.execute', () => runPlan(plan, params, mediaType, contextValue));
      if (answer !== null) return answer;
    }
    const operation = getOperationAST(document, params.operationName);
    if (operation == null) return errorsAnswer([new GraphQLError('Unable to detect operation AST')], mediaType, formatError);
    if (operation.operation === 'subscription') {
      if (streams === null) {
        return errorsAnswer([new GraphQLError('Subscriptions are not served over HTTP here: use GraphQL over WebSocket')], mediaType, formatError);
      }
      if (stream == null) {
        return errorsAnswer(
          [
            new GraphQLError(
              'A subscription needs a stream: send Accept: text/event-stream (SSE) or multipart/mixed;subscriptionSpec="1.0", or use GraphQL over WebSocket',
            ),
          ],
          mediaType,
          formatError,
        );
      }
      const args = { schema, document, rootValue, contextValue, variableValues: params.variables, operationName: params.operationName };
      if (!incrementally) return whenLoaded(streams, (subscriptions) => subscriptions.start(request, args, params, stream.format));
      return whenLoaded(streams, (subscriptions) =>
        whenLoaded(incremental, (delivery) => subscriptions.start(request, args, params, stream.format, delivery.execute)),
      );
    }
    if (operation.operation === 'mutation' && request.method === 'GET') {
      // As graphql-http answers it: a bare 405 whose body (unformatted) says why.
      return { status: 405, headers: { allow: 'POST' }, body: errorBody('Cannot perform mutations over GET') };
    }
    // Stops when the client leaves or the time bound passes (execution-bounds.ts).
    const bound = boundExecution(request.signal, options.timeoutMs);
    const args = {
      schema,
      document,
      rootValue,
      contextValue,
      variableValues: params.variables,
      operationName: params.operationName,
      abortSignal: bound.signal,
    };
    if (incrementally) return whenLoaded(incremental, (delivery) => delivery.run(args, stream.format, request.headers.get('accept'), bound));
    const result = trace === undefined ? execute(args) : childSpan(trace, 'graphql.execute', () => execute(args));
    if (!(result instanceof Promise)) {
      bound.dispose();
      return executed(result, mediaType);
    }
    return settleWithin(
      result.then((settled) => executed(settled, mediaType)),
      bound,
      (timeout) => resultAnswer({ data: null, errors: [timeout] }, mediaType, formatError),
      // Nobody reads it: the client is gone.
      () => resultAnswer({ data: null, errors: [new GraphQLError('The client went away.')] }, mediaType, formatError),
    );
  }

  /** The plan's answer, or null when graphql-js has to run the operation. */
  function runPlan(plan: OperationPlan, params: RequestParams, mediaType: GraphQLMediaType, contextValue: unknown): Answer | null {
    const result = compiled!.value!.run(plan, rootValue, contextValue, params.variables);
    if (result === null) return null;
    if (isErrorList(result)) return resultAnswer({ errors: result }, mediaType, formatError);
    return writtenAnswer(result.data, result.errors, mediaType, formatError);
  }

  function executed(result: ExecutionResult, mediaType: GraphQLMediaType): Answer {
    if (Symbol.asyncIterator in result) {
      return errorsAnswer([new GraphQLError('Subscriptions are not supported')], mediaType, formatError);
    }
    return resultAnswer(result, mediaType, formatError);
  }

  return (request, params, mediaType, trace, stream) => {
    let document: DocumentNode;
    try {
      document = trace === undefined ? documents.parse(params.query) : childSpan(trace, 'graphql.parse', () => documents.parse(params.query));
    } catch (error) {
      return thrownAnswer(error, mediaType, formatError);
    }
    if (typeof context !== 'function') return withContext(request, params, mediaType, document, context, trace, stream);
    const made: unknown = context(request, params);
    return made instanceof Promise
      ? made.then((contextValue) => withContext(request, params, mediaType, document, contextValue, trace, stream))
      : withContext(request, params, mediaType, document, made, trace, stream);
  };
}

function isErrorList(value: unknown): value is readonly GraphQLError[] {
  return Array.isArray(value);
}
