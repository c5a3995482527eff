// The handler's hot path for queries whose document is already parsed, valid and planned: it goes
// from request parameters to response bytes without graphql-http's per-request work (rule arrays,
// operation lookup, result objects, a replacer walking the whole result). Everything else (syntax
// and validation errors, mutations, unknown operations, variable-dependent @skip/@include) is left
// to graphql-http, so protocol behaviour stays graphql-http's.
import {
  execute as graphqlExecute,
  getVariableValues,
  GraphQLError,
  specifiedRules,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLSchema,
  type ValidationRule,
} from 'graphql';
import type { FormatError, RequestParams, Response as HttpResult } from 'graphql-http';
import type { DocumentCache } from '../handler/document-cache.ts';
import { bail, executePlan, type PlanResult } from './execute-plan.ts';
import { planOperation, type OperationPlan } from './plan.ts';

export interface FastPathOptions {
  schema: GraphQLSchema;
  documents: DocumentCache;
  /** The handler's extra rules (run after `specifiedRules`), the same ones graphql-http validates with. */
  validationRules: readonly ValidationRule[];
  rootValue: unknown;
  /** A context value, or a factory called with the web request and the parameters. */
  context: unknown;
  formatError: FormatError | undefined;
}

/**
 * Answers a request as graphql-http would, or returns undefined to leave it to graphql-http.
 * `mediaType` is the negotiated response type.
 */
export type FastPath = (
  request: Request,
  params: RequestParams,
  mediaType: string,
) => HttpResult | Promise<HttpResult> | undefined;

type Plans = Map<string | null | undefined, OperationPlan | null>;

export function createFastPath(options: FastPathOptions): FastPath {
  const { schema, documents, rootValue, context } = options;
  const formatError: FormatError = options.formatError ?? ((error) => error);
  const rules = [...specifiedRules, ...options.validationRules];
  // Plans live as long as their document does in the document cache.
  const plansByDocument = new WeakMap<DocumentNode, Plans>();

  function planFor(document: DocumentNode, operationName: string | null | undefined): OperationPlan | null {
    let plans = plansByDocument.get(document);
    if (plans === undefined) {
      plans = new Map();
      plansByDocument.set(document, plans);
    }
    let plan = plans.get(operationName);
    if (plan === undefined) {
      try {
        plan = planOperation(schema, document, operationName);
      } catch {
        plan = null; // graphql-js will tell the client what is wrong
      }
      // Operation names come from clients: only a few are remembered per document.
      if (plans.size < 16) plans.set(operationName, plan);
    }
    return plan;
  }

  function respond(params: RequestParams, document: DocumentNode, plan: OperationPlan, contextValue: unknown, mediaType: string) {
    const definitions = plan.operation.variableDefinitions;
    // Without definitions graphql-js coerces nothing (extra variables are ignored) and gets {}.
    const coerced =
      definitions === undefined || definitions.length === 0
        ? { coerced: {} }
        : getVariableValues(schema, definitions, params.variables ?? {}, { maxErrors: 50 });
    if (coerced.errors) return resultResponse({ errors: coerced.errors }, mediaType, formatError);
    if (!plan.async) {
      let result: PlanResult;
      try {
        result = executePlan(plan, schema, rootValue, contextValue, coerced.coerced);
      } catch (error) {
        if (error !== bail) throw error;
        return executed(params, document, contextValue, mediaType);
      }
      return planResponse(result, mediaType, formatError);
    }
    return executed(params, document, contextValue, mediaType);
  }

  function executed(params: RequestParams, document: DocumentNode, contextValue: unknown, mediaType: string) {
    const result = graphqlExecute({
      schema,
      document,
      rootValue,
      contextValue,
      variableValues: params.variables,
      operationName: params.operationName,
    });
    return result instanceof Promise
      ? result.then((settled) => resultResponse(settled, mediaType, formatError))
      : resultResponse(result as ExecutionResult, mediaType, formatError);
  }

  return (request, params, mediaType) => {
    let document: DocumentNode;
    try {
      document = documents.parse(params.query);
    } catch {
      return undefined;
    }
    if (documents.validate(schema, document, rules).length > 0) return undefined;
    const plan = planFor(document, params.operationName);
    if (plan === null) return undefined;
    if (typeof context !== 'function') return respond(params, document, plan, context, mediaType);
    const made = (context as (request: Request, params: RequestParams) => unknown)(request, params);
    return made instanceof Promise
      ? made.then((contextValue) => respond(params, document, plan, contextValue, mediaType))
      : respond(params, document, plan, made, mediaType);
  };
}

function contentTypeFor(mediaType: string): string {
  return mediaType === 'application/json' ? 'application/json; charset=utf-8' : 'application/graphql-response+json; charset=utf-8';
}

function ok(body: string, mediaType: string): HttpResult {
  return [body, { status: 200, statusText: 'OK', headers: { 'content-type': contentTypeFor(mediaType) } }];
}

function planResponse(result: PlanResult, mediaType: string, formatError: FormatError): HttpResult {
  if (result.errors.length === 0) return ok(`{"data":${result.data}}`, mediaType);
  return ok(`{"errors":${JSON.stringify(result.errors.map(formatError), errorReplacer)},"data":${result.data}}`, mediaType);
}

/** graphql-http's serialization of an execution result, byte for byte. */
function resultResponse(result: ExecutionResult, mediaType: string, formatError: FormatError): HttpResult {
  const body = result.errors ? { ...result, errors: result.errors.map(formatError) } : result;
  return ok(JSON.stringify(body, errorReplacer), mediaType);
}

/** Plain Errors (a formatError may return one) are written as `{ message }` only, like graphql-http. */
function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error && !(value instanceof GraphQLError)) return { message: value.message };
  return value;
}
