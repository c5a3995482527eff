// @defer and @stream as a schema defines them, and the test for documents that use them. Kept apart
// from the incremental executor (incremental-delivery.ts), which is loaded only when a request
// actually asks for incremental delivery. The definitions are those of graphql-js 17, so the printed
// SDL is the same.
import {
  BREAK,
  DirectiveLocation,
  GraphQLBoolean,
  GraphQLDirective,
  GraphQLInt,
  GraphQLNonNull,
  GraphQLSchema,
  GraphQLString,
  visit,
  type DocumentNode,
} from 'graphql';

export const GraphQLDeferDirective = /* @__PURE__ */ new GraphQLDirective({
  name: 'defer',
  description: 'Directs the executor to defer this fragment when the `if` argument is true or undefined.',
  locations: [DirectiveLocation.FRAGMENT_SPREAD, DirectiveLocation.INLINE_FRAGMENT],
  args: {
    if: { type: new GraphQLNonNull(GraphQLBoolean), description: 'Deferred when true or undefined.', defaultValue: true },
    label: { type: GraphQLString, description: 'Unique name' },
  },
});

export const GraphQLStreamDirective = /* @__PURE__ */ new GraphQLDirective({
  name: 'stream',
  description: 'Directs the executor to stream plural fields when the `if` argument is true or undefined.',
  locations: [DirectiveLocation.FIELD],
  args: {
    if: { type: new GraphQLNonNull(GraphQLBoolean), description: 'Stream when true or undefined.', defaultValue: true },
    label: { type: GraphQLString, description: 'Unique name' },
    initialCount: { defaultValue: 0, type: GraphQLInt, description: 'Number of items to return immediately' },
  },
});

/** `schema` with @defer and @stream defined (itself when it has them already). */
export function withIncrementalDirectives(schema: GraphQLSchema): GraphQLSchema {
  const directives = schema.getDirectives();
  const missing = [GraphQLDeferDirective, GraphQLStreamDirective].filter((directive) => !directives.some((d) => d.name === directive.name));
  if (missing.length === 0) return schema;
  return new GraphQLSchema({ ...schema.toConfig(), directives: [...directives, ...missing] });
}

const usesByDocument = new WeakMap<DocumentNode, boolean>();

/** Whether `document` has a @defer or @stream anywhere (remembered per parsed document). */
export function usesIncrementalDelivery(document: DocumentNode): boolean {
  let uses = usesByDocument.get(document);
  if (uses === undefined) {
    uses = false;
    visit(document, {
      Directive(node) {
        if (node.name.value === 'defer' || node.name.value === 'stream') {
          uses = true;
          return BREAK;
        }
        return undefined;
      },
    });
    usesByDocument.set(document, uses);
  }
  return uses;
}
