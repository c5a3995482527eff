import {
  GraphQLError,
  Kind,
  type ASTVisitor,
  type FragmentDefinitionNode,
  type ParseOptions,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';

/**
 * Bounds on what one request may ask for. Length and variable list sizes are checked before parsing
 * (400); tokens while parsing; depth, aliases and literal list sizes as validation rules, so they are
 * checked once per document and cached with its validation.
 */
export interface LimitOptions {
  /** Longest query text in characters. Default 10,000. */
  maxQueryLength?: number;
  /** Most lexical tokens in a query (graphql-js stops parsing past it). Default 2,000. */
  maxTokens?: number;
  /** Deepest field nesting, fragments followed; introspection fields are not counted. Default 10. */
  maxDepth?: number;
  /** Most aliased fields in one document. Default 20. */
  maxAliases?: number;
  /** Most items in one list argument, inline or in variables. Default 1,000. */
  maxListSize?: number;
}

export type ResolvedLimits = Required<LimitOptions>;

export const defaultLimits: ResolvedLimits = {
  maxQueryLength: 10_000,
  maxTokens: 2_000,
  maxDepth: 10,
  maxAliases: 20,
  maxListSize: 1_000,
};

const unlimited: ResolvedLimits = {
  maxQueryLength: Infinity,
  maxTokens: Infinity,
  maxDepth: Infinity,
  maxAliases: Infinity,
  maxListSize: Infinity,
};

/** Each limit set, defaulted, or Infinity throughout for `false`. */
export function resolveLimits(options: LimitOptions | false | undefined): ResolvedLimits {
  if (options === false) return unlimited;
  const limits = { ...defaultLimits };
  for (const name of Object.keys(defaultLimits) as (keyof ResolvedLimits)[]) {
    const value = options?.[name];
    if (value === undefined) continue;
    if (value !== Infinity && (!Number.isSafeInteger(value) || value <= 0)) {
      throw new TypeError(`createGraphQLHandler: limits.${name} must be a positive integer or Infinity (got ${value})`);
    }
    limits[name] = value;
  }
  return limits;
}

function limitError(name: keyof LimitOptions, message: string, max: number, actual: number, node?: ASTNodeLike): GraphQLError {
  return new GraphQLError(`${message} (limits.${name})`, {
    nodes: node as never,
    extensions: { code: 'LIMIT_EXCEEDED', limit: name, max, actual },
  });
}

type ASTNodeLike = { kind: string; loc?: unknown };

/**
 * Checks made on the raw parameters, before any parsing: they throw plain Errors, which the handler
 * answers with 400 whatever the media type.
 */
export function checkRequestLimits(limits: ResolvedLimits, query: string, variables: unknown): void {
  if (query.length > limits.maxQueryLength) {
    throw new Error(`Query is ${query.length} characters long: the limit is ${limits.maxQueryLength} (limits.maxQueryLength)`);
  }
  if (limits.maxListSize !== Infinity && variables != null) {
    const longest = longestList(variables, 0);
    if (longest > limits.maxListSize) {
      throw new Error(`A list in "variables" has ${longest} items: the limit is ${limits.maxListSize} (limits.maxListSize)`);
    }
  }
}

function longestList(value: unknown, depth: number): number {
  if (typeof value !== 'object' || value === null || depth > 64) return 0;
  let longest = 0;
  if (Array.isArray(value)) {
    longest = value.length;
    for (const item of value) longest = Math.max(longest, longestList(item, depth + 1));
  } else {
    for (const key in value) longest = Math.max(longest, longestList((value as Record<string, unknown>)[key], depth + 1));
  }
  return longest;
}

/** The validation rules for depth, aliases and inline list sizes (none for limits that are Infinity). */
export function limitValidationRules(limits: ResolvedLimits): ValidationRule[] {
  const rules: ValidationRule[] = [];
  if (limits.maxDepth !== Infinity) rules.push(maxDepthRule(limits.maxDepth));
  if (limits.maxAliases !== Infinity) rules.push(maxAliasesRule(limits.maxAliases));
  if (limits.maxListSize !== Infinity) rules.push(maxListSizeRule(limits.maxListSize));
  return rules;
}

function maxDepthRule(maxDepth: number): ValidationRule {
  return (context: ValidationContext): ASTVisitor => {
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const definition of context.getDocument().definitions) {
      if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition);
    }
    const walk = depthWalker(fragments);
    return {
      OperationDefinition(operation) {
        const depth = walk(operation.selectionSet);
        if (depth > maxDepth) {
          const name = operation.name ? ` "${operation.name.value}"` : '';
          context.reportError(limitError('maxDepth', `Operation${name} nests fields ${depth} deep: the limit is ${maxDepth}`, maxDepth, depth, operation));
        }
        return false;
      },
    };
  };
}

/**
 * Measures selection depth with each fragment's depth computed once, so fragments spreading other
 * fragments many times cost linear, not exponential, time.
 */
function depthWalker(fragments: Map<string, FragmentDefinitionNode>): (selectionSet: SelectionSetNode) => number {
  const known = new Map<string, number>();
  const visiting = new Set<string>();
  const walk = (selectionSet: SelectionSetNode): number => {
    let deepest = 0;
    for (const selection of selectionSet.selections) {
      let depth = 0;
      if (selection.kind === Kind.FIELD) {
        if (selection.name.value.startsWith('__')) continue; // introspection: bounded by the schema, switched off separately
        depth = selection.selectionSet ? 1 + walk(selection.selectionSet) : 1;
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        depth = walk(selection.selectionSet);
      } else {
        const name = selection.name.value;
        const fragment = fragments.get(name);
        // Unknown and cyclic fragments are reported by graphql-js's own rules.
        if (fragment === undefined || visiting.has(name)) continue;
        let fragmentDepth = known.get(name);
        if (fragmentDepth === undefined) {
          visiting.add(name);
          fragmentDepth = walk(fragment.selectionSet);
          visiting.delete(name);
          known.set(name, fragmentDepth);
        }
        depth = fragmentDepth;
      }
      if (depth > deepest) deepest = depth;
    }
    return deepest;
  };
  return walk;
}

function maxAliasesRule(maxAliases: number): ValidationRule {
  return (context: ValidationContext): ASTVisitor => {
    let aliases = 0;
    return {
      Field(field) {
        if (field.alias) aliases++;
      },
      Document: {
        leave(document) {
          if (aliases > maxAliases) {
            context.reportError(limitError('maxAliases', `Document uses ${aliases} aliases: the limit is ${maxAliases}`, maxAliases, aliases, document));
          }
        },
      },
    };
  };
}

function maxListSizeRule(maxListSize: number): ValidationRule {
  return (context: ValidationContext): ASTVisitor => ({
    ListValue(list) {
      if (list.values.length > maxListSize) {
        context.reportError(
          limitError('maxListSize', `A list argument has ${list.values.length} items: the limit is ${maxListSize}`, maxListSize, list.values.length, list),
        );
      }
    },
  });
}

/**
 * graphql-js reports a document over maxTokens as a syntax error; this restates it in the same
 * terms as the other limits. Other errors come back unchanged.
 */
export function restateTokenLimit(error: Error, maxTokens: number): Error {
  if (!(error instanceof GraphQLError) || !/^Syntax Error: Document contains more th\w+ \d+ tokens/.test(error.message)) return error;
  return new GraphQLError(`Query has more than ${maxTokens} tokens: the limit is ${maxTokens} (limits.maxTokens)`, {
    source: error.source,
    positions: error.positions,
    extensions: { code: 'LIMIT_EXCEEDED', limit: 'maxTokens', max: maxTokens },
  });
}

/** graphql-js parse options enforcing `maxTokens` (none when it is unlimited). */
export function parseOptionsFor(limits: ResolvedLimits): ParseOptions | undefined {
  return limits.maxTokens === Infinity ? undefined : { maxTokens: limits.maxTokens };
}
